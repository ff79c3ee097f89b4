// Engine benchmarks over the loopback fabric (docs/performance.md has the figures):
// 8-byte ping-pong, message rate, and the cost of matching with many receives posted
// or many messages unexpected.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/engine_pair.h"

namespace rdmx::bench {
namespace {

void BM_PingPong8(benchmark::State& state) {
  EnginePair p;
  uint64_t v = 0, w = 0;
  for (auto _ : state) p.pingpong(&v, &w, sizeof v, 1);
  state.SetLabel("one round trip (two 8-byte messages)");
}
BENCHMARK(BM_PingPong8);

void BM_PingPongSize(benchmark::State& state) {
  EnginePair p;
  std::vector<uint8_t> tx(static_cast<size_t>(state.range(0))), rx(tx.size());
  for (auto _ : state) p.pingpong(tx.data(), rx.data(), tx.size(), 1);
  state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0) * 2);
}
BENCHMARK(BM_PingPongSize)->RangeMultiplier(16)->Range(64, 4 << 20);

// The same size sent eagerly (limit = size) and by rendezvous (limit = size - 1):
// where the two cross is where the eager limit belongs on this fabric.
void BM_EagerVsRendezvous(benchmark::State& state) {
  int64_t size = state.range(0);
  bool eager = state.range(1) != 0;
  EnginePair p("RDMX_EAGER_LIMIT", eager ? size : size - 1);
  std::vector<uint8_t> tx(static_cast<size_t>(size)), rx(tx.size());
  for (auto _ : state) p.pingpong(tx.data(), rx.data(), tx.size(), 1);
  state.SetLabel(eager ? "eager" : "rendezvous");
}
BENCHMARK(BM_EagerVsRendezvous)->ArgsProduct({{4096, 8192, 16384, 32768, 65536, 262144}, {1, 0}});

// Messages per second: windows of 64 8-byte sends, receives pre-posted.
void BM_MessageRate(benchmark::State& state) {
  EnginePair p;
  constexpr int kWindow = 64;
  uint64_t v = 0;
  std::vector<rdmx_request_t*> r(kWindow), s(kWindow);
  for (auto _ : state) {
    for (int i = 0; i < kWindow; ++i)
      rdmx_irecv(p.c[1], 0, 0, 2, &v, 8, nullptr, nullptr, &r[size_t(i)]);
    for (int i = 0; i < kWindow; ++i)
      rdmx_isend(p.c[0], 1, 0, 2, &v, 8, 0, nullptr, nullptr, &s[size_t(i)]);
    for (int i = 0; i < kWindow; ++i) p.wait(1, r[size_t(i)]);
    for (int i = 0; i < kWindow; ++i) p.wait(0, s[size_t(i)]);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * kWindow);
}
BENCHMARK(BM_MessageRate);

// Ping-pong while N other receives (other tags) wait in the posted queue.
void BM_MatchWithPostedReceives(benchmark::State& state) {
  EnginePair p;
  int n = int(state.range(0));
  std::vector<uint64_t> sink(static_cast<size_t>(n));
  std::vector<rdmx_request_t*> pending;
  for (int i = 0; i < n; ++i) {
    rdmx_request_t* r;
    rdmx_irecv(p.c[1], 0, 0, 1000 + i, &sink[size_t(i)], 8, nullptr, nullptr, &r);
    pending.push_back(r);
  }
  uint64_t v = 0, w = 0;
  int32_t tag = 0;  // a new tag every round trip: every match goes through the hash index
  for (auto _ : state) p.pingpong(&v, &w, sizeof v, tag++ % 64);
  for (auto* r : pending) rdmx_cancel(p.c[1], r), p.wait(1, r);
}
BENCHMARK(BM_MatchWithPostedReceives)->Arg(1)->Arg(100)->Arg(10000);

// Ping-pong while N messages (other tags) wait in the unexpected queue.
void BM_MatchWithUnexpectedMessages(benchmark::State& state) {
  EnginePair p("RDMX_CREDITS", 256);
  int n = int(state.range(0));
  uint64_t v = 0, w = 0;
  for (int i = 0; i < n; ++i) {
    rdmx_request_t* s;
    rdmx_isend(p.c[0], 1, 0, 1000 + i, &v, 8, 0, nullptr, nullptr, &s);
    p.wait(0, s);
  }
  int32_t tag = 0;  // as above
  for (auto _ : state) p.pingpong(&v, &w, sizeof v, tag++ % 64);
  for (int i = 0; i < n; ++i) {
    rdmx_request_t* r;
    rdmx_irecv(p.c[1], 0, 0, 1000 + i, &v, 8, nullptr, nullptr, &r);
    p.wait(1, r);
  }
}
BENCHMARK(BM_MatchWithUnexpectedMessages)->Arg(1)->Arg(100)->Arg(10000);

}  // namespace
}  // namespace rdmx::bench

BENCHMARK_MAIN();
