#include "fabric/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmx/rdmx.h"
#include "topology/numa_memory.h"

namespace rdmx::shm {

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    base_ = o.base_;
    size_ = o.size_;
    o.fd_ = -1;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

int Segment::create(size_t bytes, size_t reserved, std::string& err) {
  reset();
  fd_ = ::memfd_create("rdmx-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) {
    err = std::string("memfd_create failed: ") + std::strerror(errno);
    return RDMX_ERR_FABRIC;
  }
  if (::ftruncate(fd_, off_t(bytes)) != 0) {
    err = "sizing a shared-memory segment of " + std::to_string(bytes) +
          " bytes failed: " + std::strerror(errno);
    reset();
    return RDMX_ERR_NO_MEMORY;
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    err = "mapping a shared-memory segment of " + std::to_string(bytes) +
          " bytes failed: " + std::strerror(errno);
    reset();
    return RDMX_ERR_NO_MEMORY;
  }
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  // The owner reads what arrives here: its pages on the owner's NUMA node where the
  // owner runs within one (numa_memory.h), set before they are allocated just below.
  topology::prefer_local(p, bytes);
  reserved = std::min(reserved, bytes);
  int e = ::posix_fallocate(fd_, 0, off_t(reserved));
  if (e == 0) e = populate(0, reserved) == ENOMEM ? ENOMEM : 0;
  if (e != 0) {
    err = "reserving " + std::to_string(reserved) +
          " bytes of shared memory failed: " + std::strerror(e) +
          " (the memory or tmpfs limit of this host or container is reached)";
    reset();
    return RDMX_ERR_NO_MEMORY;
  }
  // Sealed at its size: the peer can rely on every byte of it staying there.
  if (::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    err = std::string("sealing a shared-memory segment failed: ") + std::strerror(errno);
    reset();
    return RDMX_ERR_FABRIC;
  }
  return RDMX_OK;
}

int Segment::attach(int fd, size_t min_bytes, std::string& err) {
  reset();
  fd_ = fd;
  struct stat st {};
  int seals = ::fcntl(fd_, F_GET_SEALS);
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) < min_bytes ||
      seals < 0 || !(seals & F_SEAL_SHRINK)) {
    err = "the peer's shared-memory segment is not a sealed memory file of at least " +
          std::to_string(min_bytes) + " bytes";
    reset();
    return RDMX_ERR_PROTOCOL;
  }
  size_t bytes = size_t(st.st_size);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    err = std::string("mapping the peer's shared-memory segment failed: ") + std::strerror(errno);
    reset();
    return RDMX_ERR_NO_MEMORY;
  }
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  close_fd();
  return RDMX_OK;
}

int Segment::populate(size_t offset, size_t len) {
  if (offset > size_ || len > size_ - offset) return EINVAL;
  // Page-aligned: the segment's parts that are populated start on pages of their own.
  size_t start = offset & ~size_t(4095);
  if (::madvise(base_ + start, len + (offset - start), MADV_POPULATE_WRITE) == 0) return 0;
  return errno == ENOMEM || errno == EFAULT || errno == EHWPOISON ? ENOMEM : errno;
}

void Segment::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Segment::reset() {
  if (base_) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
  close_fd();
}

}  // namespace rdmx::shm
