// The cap on live connections (RDMX_MAX_CONNECTIONS, engine_close.h): idle connections
// are closed by agreement and opened again on demand, and nothing sent is lost,
// reordered or failed across a close and the reopen.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_test.h"
#include "engine/stress.h"

namespace rdmx::test {
namespace {

constexpr int kCapRanks = 8;
const SettingList kCapOfTwo{{"RDMX_MAX_CONNECTIONS", "2"}};

// Progresses r until it holds at most cap live connections (or a bound passes); false if
// it never did.
bool settle_to_cap(Rank& r, uint64_t cap) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (stats(r).connections_live > cap) {
    if (std::chrono::steady_clock::now() > until) return false;
    rdmx_progress(r.ctx);
  }
  return true;
}

uint64_t seed_of(int src, int dst, int round, int k) {
  return uint64_t(src) << 24 | uint64_t(dst) << 16 | uint64_t(round) << 8 | uint64_t(k);
}

// Every rank sends to every other, in two batches on one tag: the first arrives unexpected
// and its connections are closed (each rank settles to the cap) before the second opens
// them again; then the receives take both batches, which must come in the order sent.
TEST_P(EngineTest, AnAlltoallUnderACapOfTwoClosesReopensAndKeepsOrder) {
  const uint64_t big = caps().bandwidth == Capabilities::Speed::Low ? 70000 : 300000;
  const std::vector<uint64_t> sizes = {24, 3000, 100, big};  // batch 1: 0-1, batch 2: 2-3
  constexpr int kTag = 5;
  constexpr int kRounds = 2;
  run(
      kCapRanks,
      [&sizes, big](Rank& r) {
        for (int round = 0; round < kRounds; ++round) {
          std::vector<std::vector<uint8_t>> out;
          std::vector<rdmx_request_t*> sends;
          auto send_batch = [&](int from, int to) {
            for (int p = 0; p < r.size; ++p)
              for (int k = from; k < to && p != r.rank; ++k) {
                out.emplace_back(sizes[size_t(k)]);
                fill(out.back(), seed_of(r.rank, p, round, k));
                sends.push_back(isend(r, p, kTag, out.back().data(), out.back().size()));
              }
          };
          send_batch(0, 2);
          for (size_t i = 0; i < sends.size(); ++i)  // eager: done without a receive
            EXPECT_EQ(r.finish(sends[i]).error, RDMX_OK);
          sends.clear();
          EXPECT_TRUE(settle_to_cap(r, 2))
              << "rank " << r.rank << " still holds " << stats(r).connections_live
              << " connections, over its cap of 2";
          r.barrier();
          send_batch(2, 4);
          std::vector<std::vector<uint8_t>> in;
          std::vector<rdmx_request_t*> recvs;
          for (int p = 0; p < r.size; ++p)
            for (size_t k = 0; k < sizes.size() && p != r.rank; ++k) {
              in.emplace_back(big);
              recvs.push_back(irecv(r, p, kTag, in.back().data(), in.back().size()));
            }
          for (auto* s : sends) EXPECT_EQ(r.finish(s).error, RDMX_OK);
          for (size_t i = 0, p = 0; p < size_t(r.size); ++p)
            for (size_t k = 0; k < sizes.size() && int(p) != r.rank; ++k, ++i) {
              auto st = r.finish(recvs[i]);
              ASSERT_EQ(st.error, RDMX_OK) << "from rank " << p << ", message " << k;
              EXPECT_EQ(st.length, sizes[k])
                  << "from rank " << p << ": message " << k << " reordered across a close";
              EXPECT_TRUE(check(in[i].data(), st.length, seed_of(int(p), r.rank, round, int(k))))
                  << "from rank " << p << ", message " << k << ", round " << round;
            }
          r.barrier();
        }
        rdmx_stats_t s = stats(r);
        EXPECT_GT(s.connection_closes, 0u) << "rank " << r.rank;
        EXPECT_GT(s.connection_reopens, 0u) << "rank " << r.rank;
      },
      kCapOfTwo);
}

// A connection closed by agreement gives back what it held (engine_release.h): its
// receive buffers and the fabric's queue pair, socket or segments. Four rounds of an
// alltoall under a cap of 2 close and reopen connections every round; after each, a
// rank holds no more connections than it has live, and receive memory for those only.
TEST_P(EngineTest, ClosedConnectionsGiveBackWhatTheyHeld) {
  constexpr int kRounds = 4;
  const bool mixed = caps().mixed_paths;
  run(
      kCapRanks,
      [mixed](Rank& r) {
        // The receive memory of one connection, as first seen; where connections differ
        // (mixed paths), the most that live ones were seen to hold each.
        uint64_t per_link = 0;
        for (int round = 0; round < kRounds; ++round) {
          std::vector<uint64_t> out(size_t(r.size)), in(size_t(r.size));
          std::vector<rdmx_request_t*> reqs;
          for (int p = 0; p < r.size; ++p) {
            if (p == r.rank) continue;
            out[size_t(p)] = seed_of(r.rank, p, round, 0);
            reqs.push_back(irecv(r, p, round, &in[size_t(p)], sizeof(uint64_t)));
            reqs.push_back(isend(r, p, round, &out[size_t(p)], sizeof(uint64_t)));
          }
          for (auto* q : reqs) EXPECT_EQ(r.finish(q).error, RDMX_OK);
          if (rdmx_stats_t s = stats(r); per_link == 0 && s.connections_held > 0)
            per_link = s.receive_buffer_bytes / s.connections_held;
          for (int p = 0; p < r.size; ++p) {
            if (p == r.rank) continue;
            EXPECT_EQ(in[size_t(p)], seed_of(p, r.rank, round, 0)) << "from rank " << p;
          }
          EXPECT_TRUE(settle_to_cap(r, 2)) << "rank " << r.rank;
          r.barrier();
          auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (stats(r).connections_held > stats(r).connections_live &&
                 std::chrono::steady_clock::now() < until)
            rdmx_progress(r.ctx);
          rdmx_stats_t s = stats(r);
          if (mixed && s.connections_live)
            per_link = std::max(per_link, s.receive_buffer_bytes / s.connections_live);
          EXPECT_EQ(s.connections_held, s.connections_live)
              << "rank " << r.rank << ", round " << round << ": ended connections still held";
          EXPECT_LE(s.receive_buffer_bytes, s.connections_live * per_link)
              << "rank " << r.rank << ", round " << round << ": receive memory of "
              << s.connections_held << " connections held for " << s.connections_live << " live";
          r.barrier();
        }
        EXPECT_GT(stats(r).connection_reopens, 0u) << "rank " << r.rank;
      },
      // Every connection's receive buffers of one size, whatever the fabric would choose.
      SettingList{
          {"RDMX_MAX_CONNECTIONS", "2"}, {"RDMX_CREDITS", "16"}, {"RDMX_EAGER_LIMIT", "4096"}});
}

// The stress of every protocol (eager, mid-size, rendezvous, synchronous sends, wildcard
// receives) among 8 ranks that may hold 2 connections each.
TEST_P(EngineTest, ARandomizedStressUnderACapOfTwoLosesNothing) {
  using Speed = Capabilities::Speed;
  Speed rate = caps().message_rate;
  int per_pair = rate == Speed::High ? 400 : rate == Speed::Medium ? 150 : 20;
  if (const char* n = std::getenv("RDMX_TEST_STRESS_MESSAGES")) per_pair = std::atoi(n) / 56;
  run(
      kCapRanks, [per_pair](Rank& r) { stress(r, per_pair, true); }, kCapOfTwo);
}

// A peer that does not answer a proposal to close (it stopped progressing) is given up
// after RDMX_CONNECT_TIMEOUT_MS, like any peer that stops answering, with the reason in
// words; the proposer goes on with the rest.
TEST_P(EngineTest, APeerThatNeverAnswersACloseTimesOut) {
  constexpr auto kSilence = std::chrono::milliseconds(1500);
  run(
      4,
      [kSilence](Rank& r) {
        uint32_t v = 7, got = 0;
        // Rank 0 connects to ranks 1 and 2 (its cap), which then stop progressing; its
        // third connection, to rank 3, is one too many, and the oldest idle one is
        // proposed to close.
        if (r.rank == 0) {
          for (int p = 1; p < 3; ++p) EXPECT_EQ(r.finish(isend(r, p, 0, &v, sizeof v)).error, 0);
        } else if (r.rank < 3) {
          EXPECT_EQ(r.finish(irecv(r, 0, 0, &got, sizeof got)).error, RDMX_OK);
        }
        r.barrier();
        auto until = std::chrono::steady_clock::now() + kSilence;
        if (r.rank == 0) {
          // Ranks 1 and 2 leave the barrier, which progresses, before anything is proposed.
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          EXPECT_EQ(r.finish(isend(r, 3, 0, &v, sizeof v)).error, RDMX_OK);
          while (std::chrono::steady_clock::now() < until) rdmx_progress(r.ctx);
          rdmx_stats_t s = stats(r);
          EXPECT_EQ(s.connection_closes, 0u);
          EXPECT_LE(s.connections_live, 2u);
          EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("did not answer a close"),
                    std::string::npos)
              << rdmx_last_error(r.ctx);
        } else if (r.rank == 3) {
          EXPECT_EQ(r.finish(irecv(r, 0, 0, &got, sizeof got)).error, RDMX_OK);
          while (std::chrono::steady_clock::now() < until) rdmx_progress(r.ctx);
        } else {
          std::this_thread::sleep_for(kSilence);  // no progress
        }
        r.barrier();
      },
      SettingList{{"RDMX_MAX_CONNECTIONS", "2"}, {"RDMX_CONNECT_TIMEOUT_MS", "300"}});
}

// A peer that refuses a proposal to close (a synchronous send of its own waits on this
// side) is not asked again at every look for idle connections (once a millisecond): a
// failed proposal is made again on that connection only after 100 ms, and nothing is
// lost meanwhile.
TEST_P(EngineTest, ARefusedCloseIsProposedAgainOnlyAfterAWhile) {
  constexpr auto kWindow = std::chrono::milliseconds(600);
  run(
      4,
      [kWindow](Rank& r) {
        using Clock = std::chrono::steady_clock;
        uint32_t v = 7, got = 0;
        if (r.rank == 0) {
          // Rank 0 connects to rank 1 (its active side: the one that proposes) and waits
          // for rank 1's synchronous send, which then waits on rank 0: rank 1 refuses
          // every close meanwhile.
          EXPECT_EQ(r.finish(isend(r, 1, 1, &v, sizeof v)).error, RDMX_OK);
          int found = 0;
          for (auto until = Clock::now() + std::chrono::seconds(30);
               !found && Clock::now() < until;) {
            rdmx_progress(r.ctx);
            rdmx_iprobe(r.ctx, 1, 0, 2, &found, nullptr);
          }
          EXPECT_TRUE(found) << "rank 1's synchronous send never arrived";
          // Two more connections, each busy with a synchronous send that waits on its
          // peer: three live over a cap of two, and the idle one, to rank 1, is the only
          // one that may close.
          rdmx_request_t* busy[2] = {isend(r, 2, 3, &v, sizeof v, 0, RDMX_SEND_SYNC),
                                     isend(r, 3, 3, &v, sizeof v, 0, RDMX_SEND_SYNC)};
          uint64_t before = stats(r).close_proposals;
          for (auto until = Clock::now() + kWindow; Clock::now() < until;) rdmx_progress(r.ctx);
          uint64_t proposals = stats(r).close_proposals - before;
          EXPECT_GE(proposals, 1u) << "no close was proposed over the cap";
          EXPECT_LE(proposals, 12u) << "a refused close was proposed again within 100 ms";
          EXPECT_EQ(stats(r).connection_closes, 0u);
          r.barrier();
          EXPECT_EQ(r.finish(irecv(r, 1, 2, &got, sizeof got)).error, RDMX_OK);
          EXPECT_EQ(got, 8u);
          for (auto* q : busy) EXPECT_EQ(r.finish(q).error, RDMX_OK);
        } else if (r.rank == 1) {
          EXPECT_EQ(r.finish(irecv(r, 0, 1, &got, sizeof got)).error, RDMX_OK);
          uint32_t w = 8;
          rdmx_request_t* sync = isend(r, 0, 2, &w, sizeof w, 0, RDMX_SEND_SYNC);
          r.barrier();
          EXPECT_EQ(r.finish(sync).error, RDMX_OK);
        } else {
          r.barrier();
          EXPECT_EQ(r.finish(irecv(r, 0, 3, &got, sizeof got)).error, RDMX_OK);
          EXPECT_EQ(got, 7u);
        }
      },
      SettingList{{"RDMX_MAX_CONNECTIONS", "2"}});
}

}  // namespace
}  // namespace rdmx::test
