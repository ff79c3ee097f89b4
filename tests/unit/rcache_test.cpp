// The registration cache's own rules (engine/rcache.h), over a fabric that only counts:
// what a lookup finds, LRU eviction by bytes, invalidation of held and unused entries,
// the release log read before a lookup, and the disabled cache.
#include "engine/rcache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "core/mem_release.h"
#include "fabric/fabric.h"

namespace rdmx::engine {
namespace {

struct FakeFabric {
  struct Region {
    uint64_t id = 0;
  };
  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err) {
    if (fail_next) {
      fail_next = false;
      err = "refused";
      return RDMX_ERR_NO_MEMORY;
    }
    out.id = ++next;
    live[out.id] = {reinterpret_cast<uintptr_t>(addr), len, access};
    return RDMX_OK;
  }
  void dereg(Region& r) {
    EXPECT_EQ(live.erase(r.id), 1u) << "deregistered twice or never registered";
    r.id = 0;
  }
  struct Live {
    uintptr_t addr;
    size_t len;
    uint32_t access;
  };
  std::map<uint64_t, Live> live;
  uint64_t next = 0;
  bool fail_next = false;
};

using Cache = RegCache<FakeFabric>;
constexpr uint32_t kRead = fabric::kRemoteRead;
constexpr uint32_t kWrite = fabric::kLocalWrite;

class RcacheTest : public ::testing::Test {
 protected:
  void SetUp() override { page = core::page_size(); }
  // Addresses nobody maps: the cache only compares them.
  void* at(uint64_t pages, uint64_t offset = 0) {
    return reinterpret_cast<void*>(uintptr_t(1) << 40 | (pages * page + offset));
  }
  Cache::Entry* get(Cache& c, void* a, uint64_t len, uint32_t access = kRead) {
    int rc = 0;
    std::string err;
    Cache::Entry* e = c.acquire(a, len, access, rc, err);
    EXPECT_EQ(rc, e ? RDMX_OK : rc);
    return e;
  }
  FakeFabric f;
  rdmx_stats_t st{};
  size_t page = 4096;
};

TEST_F(RcacheTest, ACoveringRegistrationIsFoundWithoutRegistering) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  Cache::Entry* e = get(c, at(10, 100), 3 * page);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(f.live.at(e->region.id).addr, reinterpret_cast<uintptr_t>(at(10)));
  EXPECT_EQ(f.live.at(e->region.id).len, 4 * page);  // whole pages
  c.release(e);
  EXPECT_EQ(get(c, at(11), page), e);          // inside
  EXPECT_EQ(get(c, at(10), 4 * page), e);      // all of it
  EXPECT_NE(get(c, at(10), 4 * page + 1), e);  // one byte past
  EXPECT_EQ(st.rcache_hits, 2u);
  EXPECT_EQ(st.rcache_misses, 2u);
  EXPECT_EQ(f.live.size(), 2u);
  c.clear();
  EXPECT_TRUE(f.live.empty());
}

TEST_F(RcacheTest, AccessMustBeCovered) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  Cache::Entry* r = get(c, at(0), page, kRead);
  Cache::Entry* w = get(c, at(0), page, kWrite);
  EXPECT_NE(r, w);
  c.release(r);
  c.release(w);
  EXPECT_EQ(get(c, at(0), page, kWrite), w);
  EXPECT_EQ(get(c, at(0), page, kRead), r);
  EXPECT_EQ(st.rcache_registrations, 2u);
}

TEST_F(RcacheTest, LeastRecentlyUsedGoBeyondTheBound) {
  Cache c;
  c.init(f, true, 2 * page, &st);
  Cache::Entry* a = get(c, at(0), page);
  Cache::Entry* b = get(c, at(4), page);
  uint64_t b_id = b->region.id;
  c.release(b);
  c.release(a);  // b is now the older
  Cache::Entry* d = get(c, at(8), page);
  EXPECT_EQ(st.rcache_evictions, 1u);
  EXPECT_EQ(f.live.count(b_id), 0u);
  EXPECT_EQ(get(c, at(0), page), a);                // kept
  EXPECT_NE(get(c, at(4), page)->region.id, b_id);  // gone: a new registration
  EXPECT_EQ(c.bytes(), 3 * page);                   // all held: none can go
  (void)d;
  c.clear();
  EXPECT_TRUE(f.live.empty());
}

TEST_F(RcacheTest, HeldEntriesAreNotEvicted) {
  Cache c;
  c.init(f, true, page, &st);
  Cache::Entry* a = get(c, at(0), 4 * page);  // above the bound, but held
  EXPECT_EQ(st.rcache_evictions, 0u);
  EXPECT_EQ(get(c, at(1), page), a);
  c.release(a);
  EXPECT_EQ(st.rcache_evictions, 0u);
  c.release(a);  // now unused and over the bound
  EXPECT_EQ(st.rcache_evictions, 1u);
  EXPECT_TRUE(f.live.empty());
}

TEST_F(RcacheTest, InvalidatedEntriesGoNowOrWhenReleased) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  Cache::Entry* held = get(c, at(0), 2 * page);
  Cache::Entry* idle = get(c, at(8), 2 * page);
  Cache::Entry* apart = get(c, at(16), page);
  c.release(idle);
  c.release(apart);
  c.invalidate(reinterpret_cast<uintptr_t>(at(1)), reinterpret_cast<uintptr_t>(at(9)));
  EXPECT_EQ(st.rcache_invalidations, 2u);
  EXPECT_EQ(f.live.size(), 2u);  // held's, until released; apart's
  EXPECT_EQ(f.live.count(held->region.id), 1u);
  EXPECT_NE(get(c, at(0), page), held);  // not found any more
  c.release(held);
  EXPECT_EQ(get(c, at(16), page), apart);
  c.clear();
  EXPECT_TRUE(f.live.empty());
}

TEST_F(RcacheTest, ReleasedMemoryIsReadBeforeALookup) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  Cache::Entry* e = get(c, at(0), page);
  uint64_t id = e->region.id;
  c.release(e);
  core::ReleaseLog::note(at(0, 10), 1);  // what rdmx_memory_released does
  EXPECT_EQ(f.live.size(), 1u);          // applied at the next lookup
  EXPECT_NE(get(c, at(0), page)->region.id, id);
  EXPECT_EQ(st.rcache_invalidations, 1u);
  c.clear();
}

TEST_F(RcacheTest, ALostReleaseDropsEverything) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  c.release(get(c, at(0), page));
  c.release(get(c, at(100), page));
  for (uint64_t i = 0; i < core::ReleaseLog::kSlots + 1; ++i)
    core::ReleaseLog::note(at(1000), page);  // more than the log holds
  get(c, at(500), page);
  EXPECT_EQ(st.rcache_invalidations, 2u);
  EXPECT_EQ(f.live.size(), 1u);
  c.clear();
}

TEST_F(RcacheTest, NothingIsRecordedWithoutALiveCache) {
  uint64_t head = core::ReleaseLog::head();
  core::ReleaseLog::note(at(0), page);
  EXPECT_EQ(core::ReleaseLog::head(), head);
}

TEST_F(RcacheTest, DisabledRegistersEveryUse) {
  Cache c;
  c.init(f, false, 1 << 30, &st);
  for (int i = 0; i < 3; ++i) {
    Cache::Entry* e = get(c, at(0, 100), 10);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(f.live.at(e->region.id).len, 10u);  // exactly the buffer
    c.release(e);
    EXPECT_TRUE(f.live.empty());
  }
  EXPECT_EQ(st.rcache_registrations, 3u);
  EXPECT_EQ(st.rcache_hits + st.rcache_misses, 0u);
}

TEST_F(RcacheTest, AFailedRegistrationRetriesAfterEvicting) {
  Cache c;
  c.init(f, true, 1 << 30, &st);
  c.release(get(c, at(0), page));
  f.fail_next = true;
  Cache::Entry* e = get(c, at(8), page);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(st.rcache_evictions, 1u);
  EXPECT_EQ(f.live.size(), 1u);
  c.release(e);
}

}  // namespace
}  // namespace rdmx::engine
