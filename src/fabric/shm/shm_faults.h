// Delays the shared-memory fabric injects, process-wide, for tests of its failure
// handling: a race that real runs hit rarely is made to happen every time. Off (0)
// unless a test sets them; read only on paths that are not per message.
#pragma once

#include <atomic>
#include <cstdint>

namespace rdmx::shm {

struct Faults {
  // A peer that has claimed the back half of a split read waits this long before it
  // copies it (shm_split_read.cpp).
  std::atomic<uint32_t> split_copy_delay_us{0};
};

inline Faults& faults() {
  static Faults f;
  return f;
}

}  // namespace rdmx::shm
