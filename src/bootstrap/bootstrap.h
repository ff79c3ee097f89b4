// The standalone bootstrap, so that rdmx runs without MPI: RDMX_RANK, RDMX_SIZE and
// RDMX_BOOTSTRAP=host:port. Rank 0 listens on that port; every other rank connects to
// it (and, when the job has a secret, answers rank 0's challenge with a proof that it
// knows it). Rank 0 waits for all of them, chooses a random job key and sends it out
// (with its own proof); then
// every rank initialises its context and sends its address blob, and rank 0 sends
// everyone the table of all addresses. Every wait ends at RDMX_BOOTSTRAP_TIMEOUT_MS
// (the other ranks wait two seconds longer than rank 0, to hear its verdict): a rank
// that never shows up is named in the error, and a rank that fails tells rank 0, which
// tells the others, so that no rank waits for the full timeout in vain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap_socket.h"
#include "core/settings.h"
#include "core/siphash.h"

namespace rdmx::bootstrap {

struct Config {
  int32_t rank = -1;
  int32_t size = 0;
  std::string host;
  uint16_t port = 0;
  uint64_t timeout_ms = 30000;
  // The job secret's key (RDMX_JOB_SECRET): every rank proves it knows it before it is
  // let in, and rank 0 proves it back (bootstrap_proof.h).
  bool has_secret = false;
  SipKey key{};
};

// Reads RDMX_RANK, RDMX_SIZE and RDMX_BOOTSTRAP(_TIMEOUT_MS) from s; false with err
// naming what is missing or wrong.
bool config_from(const Settings& s, Config& out, std::string& err);

class Bootstrap {
 public:
  // Connects the job; on success job_key holds the key rank 0 chose for everyone.
  int join(const Config& c, uint64_t& job_key, std::string& err);
  // Gives this rank's address and returns everyone's, in rank order.
  int exchange(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>& all,
               std::string& err);
  // This rank cannot go on (after join): tells the others why, so they stop too.
  void abort(const std::string& why);

 private:
  int fail_all(int code, const std::string& why, std::string& err);
  Deadline deadline() const;
  std::string where() const;

  Config cfg_;
  Socket listener_;            // rank 0
  std::vector<Socket> ranks_;  // rank 0: the connection to each rank, by rank
  Socket root_;                // other ranks: the connection to rank 0
};

}  // namespace rdmx::bootstrap
