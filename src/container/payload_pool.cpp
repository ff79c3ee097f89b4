#include "container/payload_pool.h"

#include <bit>
#include <new>

namespace rdmx {

PayloadPool::Buffer PayloadPool::get(size_t len) {
  size_t want = len < 64 ? 64 : std::bit_ceil(len);
  uint8_t c = uint8_t(std::countr_zero(want));
  Buffer b{nullptr, c};
  if (!free_[c].empty()) {
    b.data = free_[c].back();
    free_[c].pop_back();
  } else {
    all_.push_back(nullptr);  // the slot first: if either allocation fails, nothing leaks
    b.data = all_.back() = static_cast<uint8_t*>(::operator new(want));
  }
  return b;
}

void PayloadPool::put(Buffer b) {
  if (b.data) free_[b.size_class].push_back(b.data);
}

PayloadPool::~PayloadPool() {
  for (uint8_t* p : all_) ::operator delete(p);
}

}  // namespace rdmx
