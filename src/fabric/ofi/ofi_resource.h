// Owners for libfabric objects: every fid is closed exactly once, by whoever owns it,
// and an fi_info list is freed with fi_freeinfo.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <utility>

namespace rdmx::ofi {

// Owns one fid_* object (fid_fabric, fid_domain, fid_ep, ...) and closes it.
template <class T>
class Fid {
 public:
  Fid() = default;
  explicit Fid(T* p) : p_(p) {}
  ~Fid() { reset(); }
  Fid(Fid&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Fid& operator=(Fid&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Fid(const Fid&) = delete;
  Fid& operator=(const Fid&) = delete;

  T* get() const { return p_; }
  fid_t fid() const { return p_ ? &p_->fid : nullptr; }
  explicit operator bool() const { return p_ != nullptr; }
  // For the libfabric calls that create the object: closes what was held first.
  T** out() {
    reset();
    return &p_;
  }
  // Closes the object now; returns fi_close's result (0 when nothing was held).
  int reset() {
    int rc = 0;
    if (p_) rc = fi_close(&p_->fid);
    p_ = nullptr;
    return rc;
  }

 private:
  T* p_ = nullptr;
};

struct InfoDeleter {
  void operator()(fi_info* i) const {
    if (i) fi_freeinfo(i);
  }
};
using Info = std::unique_ptr<fi_info, InfoDeleter>;

}  // namespace rdmx::ofi
