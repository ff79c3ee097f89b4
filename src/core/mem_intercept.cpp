// munmap, mremap, madvise and mmap as librdmx exports them: each records the range it
// takes away in the release log (core/mem_release.h), then calls the next definition in
// the lookup order (libc's, or another interposer's such as a sanitizer's), found with
// dlsym(RTLD_NEXT). While that lookup is under way the call goes straight to the kernel.
//
// These see only calls that resolve to these symbols: the program's own and its
// libraries', when librdmx is in the global scope (linked, or preloaded). They do not see
// libc calling its own internal aliases: free() giving a large chunk back, malloc
// trimming the heap with brk or madvise. docs/architecture.md ("Registration cache").
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>

#include "core/mem_release.h"

namespace {

using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
using MadviseFn = int (*)(void*, size_t, int);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);

std::atomic<bool> resolving{false};

template <class Fn>
Fn next(const char* name, std::atomic<Fn>& cache) {
  Fn f = cache.load(std::memory_order_acquire);
  if (f) return f;
  bool expected = false;
  if (!resolving.compare_exchange_strong(expected, true)) return nullptr;  // recursion
  f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  cache.store(f, std::memory_order_release);
  resolving.store(false, std::memory_order_release);
  return f;
}

std::atomic<MunmapFn> real_munmap{nullptr};
std::atomic<MremapFn> real_mremap{nullptr};
std::atomic<MadviseFn> real_madvise{nullptr};
std::atomic<MmapFn> real_mmap{nullptr};

// Advice after which the range's pages are no longer the pages it had.
bool discards(int advice) {
  switch (advice) {
    case MADV_DONTNEED:
    case MADV_FREE:
    case MADV_REMOVE: return true;
    default: return false;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int munmap(void* addr, size_t len) noexcept {
  rdmx::core::ReleaseLog::note(addr, len);
  if (MunmapFn f = next("munmap", real_munmap)) return f(addr, len);
  return int(syscall(SYS_munmap, addr, len));
}

__attribute__((visibility("default"))) void* mremap(void* old, size_t old_len, size_t new_len,
                                                    int flags, ...) noexcept {
  void* target = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    target = va_arg(ap, void*);
    va_end(ap);
    rdmx::core::ReleaseLog::note(target, new_len);
  }
  rdmx::core::ReleaseLog::note(old, old_len);
  if (MremapFn f = next("mremap", real_mremap)) return f(old, old_len, new_len, flags, target);
  return reinterpret_cast<void*>(syscall(SYS_mremap, old, old_len, new_len, flags, target));
}

__attribute__((visibility("default"))) int madvise(void* addr, size_t len, int advice) noexcept {
  if (discards(advice)) rdmx::core::ReleaseLog::note(addr, len);
  if (MadviseFn f = next("madvise", real_madvise)) return f(addr, len, advice);
  return int(syscall(SYS_madvise, addr, len, advice));
}

// mmap over an existing mapping (MAP_FIXED) replaces it without a munmap.
__attribute__((visibility("default"))) void* mmap(void* addr, size_t len, int prot, int flags,
                                                  int fd, off_t off) noexcept {
  if (flags & MAP_FIXED) rdmx::core::ReleaseLog::note(addr, len);
  if (MmapFn f = next("mmap", real_mmap)) return f(addr, len, prot, flags, fd, off);
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

}  // extern "C"

namespace rdmx::core {
bool release_intercept_linked() { return true; }
}  // namespace rdmx::core
