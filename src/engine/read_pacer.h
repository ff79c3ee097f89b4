// How many rendezvous READs one link keeps in flight, adapted to what its completions
// show. A READ that takes at least the path's retransmission timeout was retransmitted
// (its request or part of its response was lost): the window halves. A window's worth
// of READs in a row that complete sooner grow it by one again, up to the negotiated
// depth. A software RDMA device (rxe, siw) has no congestion control and resends whole
// READ responses after a loss, so a burst the path drops is dropped again when it is
// resent; fewer READs in flight end that.
//
// READs complete in the order they were posted (one send queue, reliable connection),
// so their post times wait in a ring and each completion takes the oldest.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

namespace rdmx::engine {

class ReadPacer {
 public:
  // depth: the most READs in flight; slow_ns: the path's retransmission timeout, or 0
  // when the fabric has none to report (the window then stays at depth, untimed).
  void reset(uint32_t depth, uint64_t slow_ns) {
    depth_ = std::max<uint32_t>(depth, 1);
    window_ = depth_;
    slow_ns_ = slow_ns;
    head_ = tail_ = 0;
    fast_ = 0;
    uint32_t cap = 1;
    while (cap < depth_) cap *= 2;
    mask_ = cap - 1;
    posted_at_.reset(slow_ns ? new uint64_t[cap] : nullptr);
  }
  uint32_t window() const { return window_; }
  uint32_t depth() const { return depth_; }

  // A READ was posted.
  void posted() {
    if (slow_ns_) posted(now_ns());
  }
  // The oldest READ completed; true if it was slow and the window shrank.
  bool completed() { return slow_ns_ && completed(now_ns()); }

  // The same, at a given time (ns, monotonic).
  void posted(uint64_t now) { posted_at_[tail_++ & mask_] = now; }
  bool completed(uint64_t now) {
    if (head_ == tail_) return false;
    uint64_t took = now - posted_at_[head_++ & mask_];
    if (took >= slow_ns_) {
      window_ = std::max<uint32_t>(1, window_ / 2);
      fast_ = 0;
      return true;
    }
    if (++fast_ >= window_ && window_ < depth_) {
      ++window_;
      fast_ = 0;
    }
    return false;
  }
  // The link failed: the READs in flight will not complete.
  void forget() { head_ = tail_; }

  static uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
  }

 private:
  std::unique_ptr<uint64_t[]> posted_at_;  // post times of the READs in flight
  uint32_t mask_ = 0;
  uint32_t head_ = 0, tail_ = 0;
  uint32_t depth_ = 1;
  uint32_t window_ = 1;
  uint32_t fast_ = 0;  // fast completions since the window last changed
  uint64_t slow_ns_ = 0;
};

}  // namespace rdmx::engine
