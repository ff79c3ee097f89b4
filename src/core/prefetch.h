// Asking for a cache line before it is written. A store to a line another core holds
// waits for that core to give the line up; when stores follow each other back to back
// (a sender streaming into a peer's queue), each such wait holds up the next. Asked for
// early, the line comes while other work goes on.
#pragma once

namespace rdmx {

// Fetches the line at p for writing (PREFETCHW on x86-64, where processors without it
// take it as a no-op). Never faults: p may be any address.
[[gnu::always_inline]] inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace rdmx
