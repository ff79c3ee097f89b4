// A memory registration with an owner: made once, deregistered once, by reset() or when
// the owner goes. An owner that outlives its fabric (the engine's members are destroyed
// after the fabric) resets its registrations first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmx::engine {

template <class F>
class Registration {
 public:
  Registration() = default;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration() { reset(); }

  // Registers [addr, addr + len) with access; on failure nothing is held.
  int reg(F& fabric, void* addr, size_t len, uint32_t access, std::string& err) {
    reset();
    int rc = fabric.reg(addr, len, access, region_, err);
    if (rc == 0) fabric_ = &fabric;
    return rc;
  }
  void reset() {
    if (!fabric_) return;
    fabric_->dereg(region_);
    fabric_ = nullptr;
  }
  bool live() const { return fabric_ != nullptr; }
  const typename F::Region& region() const { return region_; }

 private:
  F* fabric_ = nullptr;
  typename F::Region region_{};
};

}  // namespace rdmx::engine
