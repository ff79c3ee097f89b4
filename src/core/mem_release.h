// Memory the process gave back or remapped: a process-wide log of address ranges that
// registration caches read before they trust a cached registration (engine/rcache.h).
//
// Writers are whatever sees memory go: the interposed munmap/mremap/madvise/mmap
// (core/mem_intercept.cpp), and rdmx_memory_released (the Open MPI component forwards
// opal's release hook there). They may run on any thread, also in a signal handler:
// recording is lock-free and allocates nothing. Each cache keeps the count of ranges it
// has read; one acquire load tells it whether there is anything new, so a cache lookup
// costs no lock. A reader that falls more than kSlots behind, or meets a slot being
// rewritten, is told so and drops everything it caches.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rdmx::core {

class ReleaseLog {
 public:
  static constexpr uint64_t kSlots = 1024;

  // Ranges recorded so far (a count that only grows).
  static uint64_t head() { return head_.load(std::memory_order_acquire); }
  // Records [addr, addr + len), rounded out to whole pages, if any cache is live.
  static void note(const void* addr, size_t len);
  // Calls fn(begin, end) for every range recorded in [from, to). False if one of them was
  // lost (overwritten, or still being written): the reader must assume all memory went.
  template <class Fn>
  static bool read(uint64_t from, uint64_t to, Fn&& fn) {
    if (to - from > kSlots) return false;
    for (uint64_t i = from; i != to; ++i) {
      const Slot& s = slots_[i % kSlots];
      uint64_t seq = s.seq.load(std::memory_order_acquire);
      if (seq != 2 * i + 2) return false;
      uintptr_t b = s.begin.load(std::memory_order_relaxed);
      uintptr_t e = s.end.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) != seq) return false;
      fn(b, e);
    }
    return true;
  }
  // Live caches: nothing is recorded while there are none.
  static void cache_opened() { caches_.fetch_add(1, std::memory_order_acq_rel); }
  static void cache_closed() { caches_.fetch_sub(1, std::memory_order_acq_rel); }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};  // 2i+1 while slot i is written, 2i+2 once it is
    std::atomic<uintptr_t> begin{0};
    std::atomic<uintptr_t> end{0};
  };
  static std::atomic<uint64_t> head_;
  static std::atomic<int> caches_;
  static Slot slots_[kSlots];
};

// The system page size, read once.
size_t page_size();

// Makes sure the interposed memory calls are linked in (core/mem_intercept.cpp); true if
// they are.
bool release_intercept_linked();

}  // namespace rdmx::core
