#include "core/mem_release.h"

#include <unistd.h>

namespace rdmx::core {

std::atomic<uint64_t> ReleaseLog::head_{0};
std::atomic<int> ReleaseLog::caches_{0};
ReleaseLog::Slot ReleaseLog::slots_[ReleaseLog::kSlots];

size_t page_size() {
  static const size_t size = [] {
    long n = sysconf(_SC_PAGESIZE);
    return n > 0 ? size_t(n) : size_t(4096);
  }();
  return size;
}

void ReleaseLog::note(const void* addr, size_t len) {
  if (caches_.load(std::memory_order_acquire) == 0 || len == 0) return;
  uintptr_t page = page_size() - 1;
  uintptr_t b = reinterpret_cast<uintptr_t>(addr) & ~page;
  uintptr_t e = reinterpret_cast<uintptr_t>(addr) + len;
  e = e < reinterpret_cast<uintptr_t>(addr) ? ~uintptr_t(0) : (e + page) & ~page;
  // Reserving the slot publishes the range's existence (head); a reader that gets there
  // before the seq below says so treats it as lost, which is safe.
  uint64_t i = head_.fetch_add(1, std::memory_order_acq_rel);
  Slot& s = slots_[i % kSlots];
  s.seq.store(2 * i + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.begin.store(b, std::memory_order_relaxed);
  s.end.store(e, std::memory_order_relaxed);
  s.seq.store(2 * i + 2, std::memory_order_release);
}

}  // namespace rdmx::core
