// When to look at something that rarely has news (a listening socket, an idle fabric,
// the engine's upkeep) from a progress loop that must stay cheap. Looked at every
// kCalls calls, it is due then (kOncePerTick false) or once the coarse clock has ticked
// (1 to 4 ms) since the last time it was, and at the next call after force(). Counting
// calls alone is not enough: a rank that yields its processor or sleeps between polls
// makes each call last up to milliseconds, and one look in thousands of calls leaves a
// peer's connection request unanswered for seconds among oversubscribed ranks. Nor is
// one look in kCalls: with 256 ranks on two cores a call came once in half a second,
// and 16 calls made a connection request wait 8 s to be read. So once calls are found a
// millisecond or more apart on average, every call looks at the clock (it costs nothing
// beside such calls), until calls come faster again.
#pragma once

#include <time.h>

#include <cstdint>

namespace rdmx {

template <uint32_t kCalls = 16, bool kOncePerTick = true>
class IdlePoll {
  static_assert((kCalls & (kCalls - 1)) == 0, "a power of two");

 public:
  bool due() {
    if (!look_next_ && (++calls_ & (kCalls - 1)) != 0) [[likely]]
      return false;
    return look();
  }
  // Time has passed (a wait): the next call looks at the clock.
  void kick() { look_next_ = true; }
  // The next call is due, whatever the clock says.
  void force() { look_next_ = forced_ = true; }

 private:
  // Out of line: the progress loops that call due() keep only its first test.
  [[gnu::noinline, gnu::cold]] bool look() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    int64_t tick = int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
    // Slow calls: a millisecond or more each since the last look.
    look_next_ = tick - last_look_ >= (look_next_ ? 1 : int64_t(kCalls));
    last_look_ = tick;
    if (kOncePerTick && tick == last_due_ && !forced_) return false;
    forced_ = false;
    last_due_ = tick;
    return true;
  }

  uint32_t calls_ = 0;
  bool look_next_ = false;  // look at the clock at the next call
  bool forced_ = false;
  int64_t last_look_ = 0;  // the coarse clock's tick at the last look
  int64_t last_due_ = -1;  // ... and when due() last said yes
};

}  // namespace rdmx
