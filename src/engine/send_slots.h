// The send queue of one link as this side counts it: SENDs and READs posted and not yet
// known to be completed, against the queue's depth. Inline sends are signaled one in
// signal_every; the others are known complete only when a later signaled one completes,
// whose completion then retires all of them.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rdmx::engine {

class SendSlots {
 public:
  // The connection is up with a queue of depth work requests.
  void open(uint32_t depth, uint32_t max_signal_interval) {
    depth_ = depth;
    signal_every_ = std::clamp(depth / 4, 1u, max_signal_interval);
  }
  bool has_room() const { return used_ < depth_; }
  uint32_t used() const { return used_; }
  uint32_t unsignaled() const { return unsignaled_; }
  // Only unsignaled sends are outstanding: nothing will retire them unless a signaled
  // send follows.
  bool only_unsignaled() const { return used_ == unsignaled_; }

  // The next inline send, counted with the unsignaled ones before it: if it must be
  // signaled, its completion retires that many.
  uint32_t next_inline() const { return unsignaled_ + 1; }
  bool must_signal(uint32_t next) const { return next >= signal_every_; }
  // An inline send was posted, leaving that many unsignaled (0 if it was signaled).
  void posted_inline(uint32_t unsignaled) { unsignaled_ = unsignaled; }
  // A send or READ was posted / completed (n: the sends a signaled completion retires).
  void take() { ++used_; }
  void release(uint32_t n = 1) { used_ -= n; }

  // Runs post() with its inline send signaled whatever the interval.
  template <class Post>
  bool signaled(Post post) {
    uint32_t every = signal_every_;
    signal_every_ = 1;
    bool sent = post();
    signal_every_ = every;
    return sent;
  }

 private:
  uint32_t used_ = 0;
  uint32_t depth_ = 0;
  uint32_t unsignaled_ = 0;  // inline sends since the last signaled one
  uint32_t signal_every_ = 1;
};

}  // namespace rdmx::engine
