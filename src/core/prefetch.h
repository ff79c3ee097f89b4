// Asking for a cache line before it is written. A store to a line another core holds
// waits for that core to give the line up; when stores follow each other back to back
// (a sender streaming into a peer's queue), each such wait holds up the next. Asked for
// early, the line comes while other work goes on.
#pragma once

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace rdmx {

// Whether this processor fetches lines for writing (on x86-64, PREFETCHW: CPUID
// 0x80000001, ECX bit 8). Asked once, by whoever then calls prefetch_for_write.
inline bool prefetch_for_write_supported() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & bit_PRFCHW);
#else
  return true;
#endif
}

// Fetches the line at p for writing. A hint: it never faults, whatever p is.
[[gnu::always_inline]] inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace rdmx
