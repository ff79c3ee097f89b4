// Fixed-address objects handed out from chunks and recycled through a free list, so
// that per-message objects cost no allocation once the pool has warmed up. Every
// object has an index, and ids carry a generation so that a stale id (a late
// completion, a forged wire reference) is recognised instead of followed.
//
// T provides the pool's bookkeeping fields (PoolLinks): the free list is threaded
// through the free objects themselves, so get and put are a few instructions each.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace rdmx {

template <class T>
struct PoolLinks {
  uint32_t pool_index = 0;
  uint32_t pool_gen = 0;  // odd while handed out, even while free
  T* pool_next = nullptr;
};

template <class T>
class ObjectPool {
 public:
  static constexpr uint32_t kChunk = 1024;

  T* get() {
    if (!free_) [[unlikely]]
      add_chunk();
    T* t = free_;
    free_ = t->pool_next;
    ++t->pool_gen;
    return t;
  }
  void put(T* t) {
    ++t->pool_gen;  // invalidates outstanding ids at once
    t->pool_next = free_;
    free_ = t;
  }
  // Objects handed out and not yet put back (walks the free list: not for hot paths).
  uint64_t in_use() const {
    uint64_t free = 0;
    for (const T* t = free_; t; t = t->pool_next) ++free;
    return uint64_t(chunks_.size()) * kChunk - free;
  }
  // id = generation << 32 | index
  static uint64_t id_of(const T* t) { return uint64_t(t->pool_gen) << 32 | t->pool_index; }
  // The live object with that id, or null.
  T* find(uint64_t id) const {
    uint32_t index = uint32_t(id), gen = uint32_t(id >> 32);
    if (index / kChunk >= chunks_.size()) return nullptr;
    T* t = &chunks_[index / kChunk][index % kChunk];
    return t->pool_gen == gen && (gen & 1) ? t : nullptr;
  }

 private:
  [[gnu::noinline]] void add_chunk() {
    uint32_t base = uint32_t(chunks_.size()) * kChunk;
    chunks_.emplace_back(new T[kChunk]);
    T* c = chunks_.back().get();
    for (uint32_t i = kChunk; i-- > 0;) {
      c[i].pool_index = base + i;
      c[i].pool_gen = 0;  // even: free
      c[i].pool_next = free_;
      free_ = &c[i];
    }
  }
  std::vector<std::unique_ptr<T[]>> chunks_;
  T* free_ = nullptr;
};

}  // namespace rdmx
