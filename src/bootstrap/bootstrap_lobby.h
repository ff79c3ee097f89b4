// Rank 0's lobby: connections accepted and not yet known to be ranks of this job.
//
// Nothing a stranger does there costs the job anything. Every connection is read without
// blocking, so a stalled one delays no one; one whose first message is not a Join for a
// free rank of this job is told why, dropped and remembered for the error rank 0 gives if
// the job never starts; one that has said nothing after kIdleLimit is dropped; and when
// the process runs out of file descriptors, the longest-waiting stranger makes room.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <array>

#include "bootstrap/bootstrap_proof.h"
#include "bootstrap/bootstrap_socket.h"

namespace rdmx::bootstrap {

class Lobby {
 public:
  static constexpr auto kIdleLimit = std::chrono::seconds(10);
  static constexpr size_t kMaxWaiting = 256;  // strangers held at once

  // key: the job secret's, when the job has one; then every connection is challenged
  // and admitted only with a proof (bootstrap_proof.h).
  Lobby(int32_t size, const Socket& listener, const SipKey* key)
      : size_(size), listener_(listener), key_(key), challenges_(size_t(size)) {}

  // Admits ranks 1..size-1 into ranks (indexed by rank) until all are there (true) or
  // the deadline passes (false).
  bool fill(std::vector<Socket>& ranks, Deadline d);
  // The connections turned away, in words ("" if none), for rank 0's error.
  std::string turned_away() const;
  // The challenge an admitted rank answered (with a job secret).
  const uint8_t* challenge_of(int32_t rank) const { return challenges_[size_t(rank)].data(); }

 private:
  struct Waiting {
    Socket s;
    std::string from;  // the peer's address, for messages
    Clock::time_point since;
    uint8_t buf[kJoinBytes + kProofBytes] = {};
    size_t got = 0;
    std::array<uint8_t, kChallengeBytes> challenge{};
  };

  void accept_all(Clock::time_point now);
  // Reads what w has sent; true when w is done with (admitted or dropped).
  bool read(Waiting& w, std::vector<Socket>& ranks);
  void turn_away(Waiting& w, const std::string& why, bool tell);

  size_t join_bytes() const { return kJoinBytes + (key_ ? kProofBytes : 0); }

  int32_t size_;
  const Socket& listener_;
  const SipKey* key_;
  std::vector<std::array<uint8_t, kChallengeBytes>> challenges_;
  std::vector<Waiting> waiting_;
  int32_t joined_ = 0;
  Clock::time_point backoff_until_{};
  std::vector<std::string> reasons_;  // the first few, in words
  size_t turned_away_ = 0;
};

}  // namespace rdmx::bootstrap
