// The registration cache: rendezvous buffers stay registered after their message, so
// that the next message from or into the same pages registers nothing.
//
// An entry is one registration of whole pages [begin, end) with some access, owned by the
// cache (deregistered once: when evicted, invalidated, cleared, or at the cache's end). A
// request holds an entry from acquire() to release(); entries nobody holds wait in LRU
// order and the oldest go once the cache holds more than its byte bound (RDMX_RCACHE_SIZE).
// Lookup is a binary search in a sorted vector of entries; a hit allocates nothing and
// takes no lock. Entries are recycled through a free list, so steady traffic allocates
// nothing on a miss either.
//
// Memory that went back to the system is read from the process-wide release log
// (core/mem_release.h) before every lookup: entries overlapping a released range leave
// the index at once, and are deregistered at once or, if a request holds them, when it
// lets go. Disabled (RDMX_RCACHE=off), acquire() registers exactly the buffer and
// release() deregisters it: one registration per message, as without a cache.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "container/intrusive_list.h"
#include "core/mem_release.h"
#include "rdmx/rdmx.h"

namespace rdmx::engine {

template <class F>
class RegCache {
 public:
  struct Entry {
    uintptr_t begin = 0, end = 0;  // registered range (whole pages when cached)
    uint32_t access = 0;
    uint32_t refs = 0;     // requests holding it
    bool indexed = false;  // findable by lookups (false once invalidated)
    ListNode node;         // the LRU list while unused, the free list while free
    typename F::Region region{};
  };

  RegCache() = default;
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;
  ~RegCache() { clear(); }

  // enabled: keep registrations; max_bytes: the most unused-or-not bytes kept registered
  // before unused entries are evicted. stats receives the rcache_* counters.
  void init(F& fabric, bool enabled, uint64_t max_bytes, rdmx_stats_t* stats) {
    fabric_ = &fabric;
    enabled_ = enabled;
    max_bytes_ = max_bytes;
    stats_ = stats;
    if (enabled_ && !open_) {
      core::release_intercept_linked();
      seen_ = core::ReleaseLog::head();
      core::ReleaseLog::cache_opened();
      open_ = true;
    }
  }
  bool enabled() const { return enabled_; }
  uint64_t bytes() const { return bytes_; }
  size_t entries() const { return index_.size(); }

  // A registration covering [addr, addr + len) with at least access, held until
  // release(); null with rc and err set if registering failed.
  Entry* acquire(void* addr, uint64_t len, uint32_t access, int& rc, std::string& err) {
    auto a = reinterpret_cast<uintptr_t>(addr);
    if (!enabled_) return add(a, a + len, access, rc, err);
    if (core::ReleaseLog::head() != seen_) [[unlikely]]
      drain_released();
    if (Entry* e = find(a, a + len, access)) {
      ++stats_->rcache_hits;
      if (e->refs++ == 0) e->node.unlink();
      return e;
    }
    ++stats_->rcache_misses;
    uintptr_t page = core::page_size() - 1;
    Entry* e = add(a & ~page, (a + len + page) & ~page, access, rc, err);
    if (!e && evict_unused(0)) e = add(a & ~page, (a + len + page) & ~page, access, rc, err);
    if (!e) return nullptr;
    insert(e);
    evict_unused(max_bytes_);
    return e;
  }

  void release(Entry* e) {
    if (--e->refs) return;
    if (!e->indexed) {  // disabled, or invalidated while held
      drop(e);
      return;
    }
    e->node.owner = e;
    e->node.push_back(lru_);
    evict_unused(max_bytes_);
  }

  // Drops every entry overlapping [begin, end): deregistered now, or when released.
  void invalidate(uintptr_t begin, uintptr_t end) {
    auto it = std::lower_bound(index_.begin(), index_.end(),
                               begin > max_span_ ? begin - max_span_ : 0, before);
    while (it != index_.end() && (*it)->begin < end) {
      Entry* e = *it;
      if (e->end <= begin) {
        ++it;
        continue;
      }
      it = index_.erase(it);
      unindex(e);
      ++stats_->rcache_invalidations;
      if (e->refs == 0) {
        e->node.unlink();
        drop(e);
      }
    }
  }

  // Deregisters everything, held or not (the engine's end: no request runs any more).
  void clear() {
    for (Entry* e : index_) {
      e->node.unlink();
      unindex(e);
      drop(e);
    }
    index_.clear();
    for (auto& e : storage_)
      if (e->refs) {
        e->refs = 0;
        if (!e->node.linked()) drop(e.get());
      }
    if (open_) core::ReleaseLog::cache_closed();
    open_ = false;
  }

 private:
  static bool before(const Entry* e, uintptr_t a) { return e->begin < a; }

  // An entry that covers [a, b) with access. Only entries that start at most max_span_
  // before a can.
  Entry* find(uintptr_t a, uintptr_t b, uint32_t access) {
    auto it = std::upper_bound(index_.begin(), index_.end(), a,
                               [](uintptr_t x, const Entry* e) { return x < e->begin; });
    uintptr_t lowest = a > max_span_ ? a - max_span_ : 0;
    while (it != index_.begin()) {
      Entry* e = *--it;
      if (e->begin < lowest) break;
      if (e->end >= b && (e->access & access) == access) return e;
    }
    return nullptr;
  }

  Entry* add(uintptr_t begin, uintptr_t end, uint32_t access, int& rc, std::string& err) {
    Entry* e;
    if (!free_.empty()) {
      e = static_cast<Entry*>(free_.first->owner);
      e->node.unlink();
    } else {
      storage_.push_back(std::make_unique<Entry>());
      e = storage_.back().get();
    }
    rc = fabric_->reg(reinterpret_cast<void*>(begin), size_t(end - begin), access, e->region, err);
    if (rc) {
      put_free(e);
      return nullptr;
    }
    ++stats_->rcache_registrations;
    e->begin = begin;
    e->end = end;
    e->access = access;
    e->refs = 1;
    return e;
  }

  void insert(Entry* e) {
    index_.insert(std::upper_bound(index_.begin(), index_.end(), e->begin,
                                   [](uintptr_t x, const Entry* y) { return x < y->begin; }),
                  e);
    e->indexed = true;
    bytes_ += e->end - e->begin;
    max_span_ = std::max(max_span_, e->end - e->begin);
  }
  void unindex(Entry* e) {
    e->indexed = false;
    bytes_ -= e->end - e->begin;
  }

  // Evicts the least recently used unused entries until at most limit bytes are cached;
  // true if it evicted any.
  bool evict_unused(uint64_t limit) {
    bool any = false;
    while (bytes_ > limit && !lru_.empty()) {
      Entry* e = static_cast<Entry*>(lru_.first->owner);
      e->node.unlink();
      index_.erase(std::find(index_.begin(), index_.end(), e));
      unindex(e);
      drop(e);
      ++stats_->rcache_evictions;
      any = true;
    }
    return any;
  }

  void drain_released() {
    uint64_t head = core::ReleaseLog::head();
    bool complete =
        core::ReleaseLog::read(seen_, head, [this](uintptr_t b, uintptr_t e) { invalidate(b, e); });
    if (!complete) invalidate(0, ~uintptr_t(0));  // ranges lost: assume everything went
    seen_ = head;
  }

  void drop(Entry* e) {
    fabric_->dereg(e->region);
    put_free(e);
  }
  void put_free(Entry* e) {
    e->refs = 0;
    e->node.owner = e;
    e->node.push_back(free_);
  }

  F* fabric_ = nullptr;
  bool enabled_ = false;
  bool open_ = false;  // counted among the release log's live caches
  uint64_t max_bytes_ = 0;
  uint64_t bytes_ = 0;      // registered by indexed entries
  uintptr_t max_span_ = 0;  // the longest indexed entry ever: bounds a lookup's scan
  uint64_t seen_ = 0;       // release log ranges already applied
  rdmx_stats_t* stats_ = nullptr;
  std::vector<Entry*> index_;  // indexed entries by begin
  List lru_;                   // indexed entries nobody holds, oldest first
  List free_;                  // entries with no registration, for reuse
  std::vector<std::unique_ptr<Entry>> storage_;
};

}  // namespace rdmx::engine
