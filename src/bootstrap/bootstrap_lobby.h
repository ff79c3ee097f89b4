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

#include "bootstrap/bootstrap_socket.h"

namespace rdmx::bootstrap {

class Lobby {
 public:
  static constexpr auto kIdleLimit = std::chrono::seconds(10);
  static constexpr size_t kMaxWaiting = 256;  // strangers held at once

  Lobby(int32_t size, const Socket& listener) : size_(size), listener_(listener) {}

  // Admits ranks 1..size-1 into ranks (indexed by rank) until all are there (true) or
  // the deadline passes (false).
  bool fill(std::vector<Socket>& ranks, Deadline d);
  // The connections turned away, in words ("" if none), for rank 0's error.
  std::string turned_away() const;

 private:
  struct Waiting {
    Socket s;
    std::string from;  // the peer's address, for messages
    Clock::time_point since;
    uint8_t buf[kJoinBytes] = {};
    size_t got = 0;
  };

  void accept_all(Clock::time_point now);
  // Reads what w has sent; true when w is done with (admitted or dropped).
  bool read(Waiting& w, std::vector<Socket>& ranks);
  void turn_away(Waiting& w, const std::string& why, bool tell);

  int32_t size_;
  const Socket& listener_;
  std::vector<Waiting> waiting_;
  int32_t joined_ = 0;
  Clock::time_point backoff_until_{};
  std::vector<std::string> reasons_;  // the first few, in words
  size_t turned_away_ = 0;
};

}  // namespace rdmx::bootstrap
