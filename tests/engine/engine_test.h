// The backend-parametrized engine suites: each TEST_P runs on every backend that
// instantiates EngineTest (loopback here; ofi-tcp and verbs in their own files).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/world.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {

class EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable(GetParam());
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend " << GetParam() << ": " << why;
  }
  void run(int n, const std::function<void(Rank&)>& body, const SettingList& settings = {},
           const std::function<SettingList(int)>& settings_for = nullptr) {
    run_world(GetParam(), n, body, settings, settings_for);
  }
  // What the backend under test can do: branch or skip on this, not on its name.
  Capabilities caps() const { return capabilities(GetParam()); }
};

// The suites that drive a peer process by hand (kill it, let it exit): every backend
// whose ranks are processes instantiates them.
class ProcessTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (!IsSkipped() && caps().in_process)
      GTEST_SKIP() << "the ranks of " << GetParam() << " are threads";
  }
};

// A connect storm (connect_storm_suite.cpp): processes too, on the backends that connect
// across hosts or share one listener among many local peers.
class StormTest : public ProcessTest {};

// A deterministic byte pattern for (seed, index), so receivers can verify payloads.
inline uint8_t pattern(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  return uint8_t(x >> 56 ^ x >> 29);
}
inline void fill(std::vector<uint8_t>& b, uint64_t seed) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(seed, i);
}
inline bool check(const uint8_t* b, uint64_t n, uint64_t seed) {
  for (uint64_t i = 0; i < n; ++i)
    if (b[i] != pattern(seed, i)) return false;
  return true;
}

// The rank's counters now.
inline rdmx_stats_t stats(Rank& r) {
  rdmx_stats_t s{};
  rdmx_get_stats(r.ctx, &s);
  return s;
}

rdmx_request_t* isend(Rank& r, int dest, int tag, const void* buf, uint64_t len, uint32_t cid = 0,
                      uint32_t flags = 0);
rdmx_request_t* irecv(Rank& r, int src, int tag, void* buf, uint64_t len, uint32_t cid = 0);

}  // namespace rdmx::test
