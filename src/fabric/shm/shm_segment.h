// A shared-memory segment with an owner: an anonymous memory file (memfd), mapped. It
// has no name in /dev/shm or anywhere else: the other process receives its descriptor
// over the connection's socket, so nothing is left behind when either process dies,
// however it dies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmx::shm {

class Segment {
 public:
  Segment() = default;
  ~Segment() { reset(); }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  Segment(Segment&& o) noexcept { *this = static_cast<Segment&&>(o); }
  Segment& operator=(Segment&& o) noexcept;

  // Makes a segment of `bytes`, the first `reserved` of them reserved and mapped now (so
  // that a full memory limit is an error here, not a SIGBUS later); the rest stays
  // unallocated until populate() reserves it.
  int create(size_t bytes, size_t reserved, std::string& err);
  // Maps the segment behind fd (taking fd); its size must be at least min_bytes.
  int attach(int fd, size_t min_bytes, std::string& err);
  // Allocates and maps [offset, offset + len) now, in one call rather than a page fault
  // per page as messages first touch them. Returns 0 or the errno: ENOMEM where the
  // memory or tmpfs limit is reached (never a SIGBUS later); EINVAL where the kernel
  // (before 5.14) cannot, and the pages come at first touch as before.
  int populate(size_t offset, size_t len);
  // The descriptor, for passing to the peer; close_fd() once passed.
  int fd() const { return fd_; }
  void close_fd();
  void reset();

  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }
  bool contains(const void* p, size_t len) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    return a >= b && len <= size_ && a - b <= size_ - len;
  }

 private:
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rdmx::shm
