// Faults the shared-memory fabric injects, process-wide, for tests of its failure
// handling: what real runs hit rarely is made to happen every time. Off unless a test
// sets them; read only on paths that are not per message.
#pragma once

#include <atomic>
#include <cstdint>

namespace rdmx::shm {

struct Faults {
  // A peer that has claimed the back half of a split read waits this long before it
  // copies it (shm_split_read.cpp).
  std::atomic<uint32_t> split_copy_delay_us{0};
  // A reader that has told the peer of its split read waits this long before it copies
  // the front half: the peer, if it runs, claims the back half first.
  std::atomic<uint32_t> split_front_delay_us{0};
  // The kernel refuses this process's cross-memory copies (EPERM), as when a policy
  // changes during a job: its reads (process_vm_readv), or its copies of back halves
  // (process_vm_writev).
  std::atomic<bool> cma_read_refused{false};
  std::atomic<bool> cma_write_refused{false};
  // The staging area of a connection's first copy read cannot be allocated, as when the
  // memory or tmpfs limit is reached (Fabric::reserve_staging).
  std::atomic<bool> staging_refused{false};
  // A connect request counts as silent this many milliseconds after it was accepted
  // (-1: the fabric's own deadline, 10 s): 0 makes every request late at once, as for a
  // rank that looks at its sockets seconds apart among oversubscribed ranks
  // (Fabric::expire_requests).
  std::atomic<int32_t> request_deadline_ms{-1};
};

inline Faults& faults() {
  static Faults f;
  return f;
}

}  // namespace rdmx::shm
