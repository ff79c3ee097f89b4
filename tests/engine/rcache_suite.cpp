// The registration cache (engine/rcache.h) on every backend: rendezvous buffers stay
// registered between messages, and a buffer whose pages were replaced (unmapped and
// mapped again at the same address, mapped over, discarded) is registered anew, on the
// sending and on the receiving side. Where registering pins pages (verbs) a stale
// registration would move the old pages' bytes; elsewhere the counters tell.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

constexpr uint64_t kLen = 1 << 20;  // by rendezvous under kRndv

const SettingList kRndv = {
    {"RDMX_EAGER_LIMIT", "4096"}, {"RDMX_MIDSIZE_LIMIT", "0"}, {"RDMX_RCACHE", "on"}};

SettingList with(SettingList s, const char* name, const char* value) {
  s.push_back({name, value});
  return s;
}

// Anonymous memory of its own mapping, unmapped at the end.
struct Mapping {
  explicit Mapping(uint64_t n) : len(n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) addr = static_cast<uint8_t*>(p);
  }
  ~Mapping() {
    if (addr) munmap(addr, len);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  void fill(uint64_t seed) {
    for (uint64_t i = 0; i < len; ++i) addr[i] = pattern(seed, i);
  }
  uint8_t* addr = nullptr;
  uint64_t len;
};

// Ways the pages behind an address change while the address stays.
enum class Replace { MapOver, UnmapAndMap, Discard };
const char* name(Replace w) {
  switch (w) {
    case Replace::MapOver: return "mmap(MAP_FIXED) over it";
    case Replace::UnmapAndMap: return "munmap, then mmap at the same address";
    case Replace::Discard: return "madvise(MADV_DONTNEED)";
  }
  return "";
}

// New pages at m.addr (or, if another rank's thread took the address in between, new
// pages elsewhere: the old registration must go all the same).
bool replace(Mapping& m, Replace w) {
  int prot = PROT_READ | PROT_WRITE;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  void* p = nullptr;
  switch (w) {
    case Replace::MapOver: p = mmap(m.addr, m.len, prot, flags | MAP_FIXED, -1, 0); break;
    case Replace::UnmapAndMap:
      munmap(m.addr, m.len);
      // Another rank's thread may have taken the address meanwhile: never map over it.
      p = mmap(m.addr, m.len, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == MAP_FAILED) {
        p = mmap(nullptr, m.len, prot, flags, -1, 0);
        if (p == MAP_FAILED) return false;
        m.addr = static_cast<uint8_t*>(p);
      }
      break;
    case Replace::Discard: return madvise(m.addr, m.len, MADV_DONTNEED) == 0;
  }
  return p == m.addr;
}

const Replace kWays[] = {Replace::MapOver, Replace::UnmapAndMap, Replace::Discard};

// One message of kLen bytes with tag i: rank 0 fills m with i's pattern and sends it,
// rank 1 receives into m and checks the pattern.
void pass(Rank& r, Mapping& m, int i) {
  if (r.rank == 0) {
    m.fill(uint64_t(i));
    EXPECT_EQ(r.finish(isend(r, 1, i, m.addr, kLen)).error, RDMX_OK);
  } else {
    EXPECT_EQ(r.finish(irecv(r, 0, i, m.addr, kLen)).error, RDMX_OK);
    EXPECT_TRUE(check(m.addr, kLen, uint64_t(i)));
  }
}

TEST_P(EngineTest, RcacheStalePagesAreNotReused) {
  run(
      2,
      [&](Rank& r) {
        // Rank 0 sends from m, rank 1 receives into m; the side named replaces its pages
        // between two messages, each with contents of its own.
        Mapping m(kLen);
        ASSERT_NE(m.addr, nullptr);
        uint64_t seed = 1;
        auto exchange = [&](uint64_t s) {
          if (r.rank == 0) {
            m.fill(s);
            EXPECT_EQ(r.finish(isend(r, 1, 7, m.addr, kLen)).error, RDMX_OK);
          } else {
            std::memset(m.addr, 0, kLen);
            auto st = r.finish(irecv(r, 0, 7, m.addr, kLen));
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(st.length, kLen);
            EXPECT_TRUE(check(m.addr, kLen, s)) << "received stale bytes, seed " << s;
          }
        };
        for (int side : {0, 1})
          for (Replace w : kWays) {
            SCOPED_TRACE(std::string(side ? "receiver: " : "sender: ") + name(w));
            exchange(++seed);
            r.barrier();
            auto before = stats(r);
            if (r.rank == side) {
              ASSERT_TRUE(replace(m, w)) << std::strerror(errno);
            }
            r.barrier();
            exchange(++seed);
            if (r.rank == side) {
              auto after = stats(r);
              EXPECT_GE(after.rcache_invalidations - before.rcache_invalidations, 1u);
              EXPECT_EQ(after.rcache_hits - before.rcache_hits, 0u);
            }
            r.barrier();
          }
      },
      kRndv);
}

TEST_P(EngineTest, RcacheHitsOnARepeatedBuffer) {
  constexpr int kRounds = 8;
  run(
      2,
      [&](Rank& r) {
        Mapping m(kLen);
        ASSERT_NE(m.addr, nullptr);
        auto before = stats(r);
        for (int i = 0; i < kRounds; ++i) pass(r, m, i);
        // A part of the buffer is covered by its registration too.
        if (r.rank == 0)
          EXPECT_EQ(r.finish(isend(r, 1, 99, m.addr + 4096, kLen / 2)).error, RDMX_OK);
        else
          EXPECT_EQ(r.finish(irecv(r, 0, 99, m.addr + 8192, kLen / 2)).error, RDMX_OK);
        auto after = stats(r);
        EXPECT_EQ(after.rcache_registrations - before.rcache_registrations, 1u);
        EXPECT_EQ(after.rcache_misses - before.rcache_misses, 1u);
        EXPECT_EQ(after.rcache_hits - before.rcache_hits, uint64_t(kRounds));
        r.barrier();
      },
      kRndv);
}

TEST_P(EngineTest, RcacheEvictsBeyondItsSize) {
  constexpr int kBuffers = 4;
  run(
      2,
      [&](Rank& r) {
        std::vector<std::unique_ptr<Mapping>> bufs;
        for (int i = 0; i < kBuffers; ++i) {
          bufs.push_back(std::make_unique<Mapping>(kLen));
          ASSERT_NE(bufs.back()->addr, nullptr);
        }
        auto before = stats(r);
        // Two rounds over four buffers with room for two: every use misses.
        for (int i = 0; i < 2 * kBuffers; ++i) pass(r, *bufs[size_t(i % kBuffers)], i);
        auto after = stats(r);
        EXPECT_EQ(after.rcache_misses - before.rcache_misses, uint64_t(2 * kBuffers));
        EXPECT_EQ(after.rcache_hits - before.rcache_hits, 0u);
        EXPECT_GE(after.rcache_evictions - before.rcache_evictions, uint64_t(2 * kBuffers - 2));
        r.barrier();
      },
      with(kRndv, "RDMX_RCACHE_SIZE", "2097152"));
}

TEST_P(EngineTest, RcacheOffRegistersEveryMessage) {
  constexpr int kRounds = 4;
  SettingList off = {
      {"RDMX_EAGER_LIMIT", "4096"}, {"RDMX_MIDSIZE_LIMIT", "0"}, {"RDMX_RCACHE", "off"}};
  run(
      2,
      [&](Rank& r) {
        Mapping m(kLen);
        ASSERT_NE(m.addr, nullptr);
        auto before = stats(r);
        for (int i = 0; i < kRounds; ++i) pass(r, m, i);
        auto after = stats(r);
        EXPECT_EQ(after.rcache_registrations - before.rcache_registrations, uint64_t(kRounds));
        EXPECT_EQ(after.rcache_hits, 0u);
        EXPECT_EQ(after.rcache_misses, 0u);
        r.barrier();
      },
      off);
}

}  // namespace
}  // namespace rdmx::test
