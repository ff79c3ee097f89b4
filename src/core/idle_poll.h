// When to look at something that rarely has news (a listening socket, an idle fabric)
// from a progress loop that must stay cheap. Looked at every 16 calls, it is due once
// the coarse clock has ticked (1 to 4 ms) since the last time it was, or at once after
// kick() (a wait, which means time has passed). Counting calls alone is not enough: a
// rank that yields its processor or sleeps between polls makes each call last up to
// milliseconds, and one look in thousands of calls leaves a peer's connection request
// unanswered for seconds among oversubscribed ranks.
#pragma once

#include <time.h>

#include <cstdint>

namespace rdmx {

class IdlePoll {
 public:
  bool due() {
    if (!kicked_ && (++calls_ & 15) != 0) [[likely]]
      return false;
    kicked_ = false;
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    int64_t tick = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
    if (tick == last_tick_) return false;
    last_tick_ = tick;
    return true;
  }
  void kick() { kicked_ = true; }

 private:
  uint32_t calls_ = 0;
  int64_t last_tick_ = -1;  // the coarse clock's tick when due() last said yes
  bool kicked_ = false;
};

}  // namespace rdmx
