// The calling thread's CPU time (user and system), for start-up accounting: what a
// fabric library's own discovery costs a rank, apart from rdmx's work.
#pragma once

#include <time.h>

#include <cstdint>

namespace rdmx {

inline uint64_t thread_cpu_ns() {
  timespec t;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

}  // namespace rdmx
