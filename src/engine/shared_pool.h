// The shared receive pool's memory: buffers every connection's receives come from
// (RDMX_SRQ), in chunks of equal size, each allocated and registered at once. The first
// chunk is made at start-up; a fabric that reports the pool running low (verbs'
// IBV_EVENT_SRQ_LIMIT_REACHED) gets more, up to a bound, and keeps them until the
// context ends. Buffer i is in chunk i / chunk_buffers: the first chunk's are found
// with one multiplication, as before the pool could grow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/aligned_buffer.h"
#include "engine/registration.h"
#include "fabric/fabric.h"
#include "rdmx/rdmx.h"
#include "topology/numa_memory.h"

namespace rdmx::engine {

template <class F>
class SharedPool {
 public:
  // The first chunk: n buffers of size bytes; the pool may grow to max buffers.
  int init(F& fabric, uint32_t n, uint32_t size, uint32_t max, std::string& err) {
    chunk_ = n;
    size_ = size;
    max_ = std::max(max, n);
    chunks_.reserve(max_ / chunk_);
    return add_chunk(fabric, err);
  }
  // One more chunk, if the bound leaves room: its buffers are [size() before, size()).
  // RDMX_ERR_AGAIN at the bound.
  int grow(F& fabric, std::string& err) {
    if (count() + chunk_ > max_) return RDMX_ERR_AGAIN;
    return add_chunk(fabric, err);
  }

  uint8_t* buffer(uint64_t i) const {
    if (i < chunk_) [[likely]]
      return first_ + i * size_;
    return chunks_[i / chunk_]->mem.get() + (i % chunk_) * size_;
  }
  const typename F::Region& region(uint64_t i) const { return chunks_[i / chunk_]->reg.region(); }
  uint32_t count() const { return uint32_t(chunks_.size()) * chunk_; }
  uint32_t chunk_buffers() const { return chunk_; }
  uint32_t max() const { return max_; }
  uint64_t bytes() const { return uint64_t(count()) * size_; }
  // The registrations go while the fabric is still there.
  void reset() {
    for (auto& c : chunks_) c->reg.reset();
  }

 private:
  struct Chunk {
    AlignedBuffer mem;
    Registration<F> reg;
  };

  int add_chunk(F& fabric, std::string& err) {
    size_t bytes = size_t(chunk_) * size_;
    auto c = std::make_unique<Chunk>();
    c->mem = topology::alloc_local(bytes);
    if (!c->mem) {
      err = "out of memory for " + std::to_string(bytes) + " bytes of shared receive buffers";
      return RDMX_ERR_NO_MEMORY;
    }
    if (int rc = c->reg.reg(fabric, c->mem.get(), bytes, fabric::kLocalWrite, err)) return rc;
    chunks_.push_back(std::move(c));
    if (chunks_.size() == 1) first_ = chunks_[0]->mem.get();
    return RDMX_OK;
  }

  std::vector<std::unique_ptr<Chunk>> chunks_;
  uint8_t* first_ = nullptr;
  uint32_t chunk_ = 1;  // buffers per chunk
  uint32_t size_ = 0;   // bytes per buffer
  uint32_t max_ = 0;    // buffers the pool may grow to
};

}  // namespace rdmx::engine
