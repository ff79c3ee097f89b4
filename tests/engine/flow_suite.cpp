// Credit flow control under a slow receiver, sends that must survive their sender's
// finalize, and a randomized stress across the protocol thresholds with wildcards,
// checked against MPI's matching rules (stress.h).
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "engine/engine_test.h"
#include "engine/stress.h"
#include "fabric/fabric.h"

namespace rdmx::test {
namespace {

TEST_P(EngineTest, CreditExhaustionWithSlowReceiver) {
  constexpr int kN = 500;
  // A receiver with a shared receive pool grants credits too, as permission: they hold
  // the sender the same way. Where small messages take no credit, the room in the
  // fabric's queue holds it.
  bool small_uncredited = caps().small_uncredited;
  run(
      2,
      [small_uncredited](Rank& r) {
        if (r.rank == 0) {
          std::vector<uint32_t> v(kN);
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            v[size_t(i)] = uint32_t(i);
            q.push_back(isend(r, 1, i % 5, &v[size_t(i)], 4));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          rdmx_stats_t s{};
          rdmx_get_stats(r.ctx, &s);
          EXPECT_GT(s.credit_stalls, 0u) << "the sender never ran out of credits (or room)";
        } else {
          // Do not progress for a while: the sender must queue, not drop or overrun.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          for (int i = 0; i < kN; ++i) {
            uint32_t got = ~0u;
            auto st = r.finish(irecv(r, 0, RDMX_ANY_TAG, &got, 4));
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(got, uint32_t(i)) << "reordered or lost";
            EXPECT_EQ(st.tag, i % 5);
          }
          rdmx_stats_t s{};
          rdmx_get_stats(r.ctx, &s);
          // Messages paced by the fabric's queue took no credit: none is owed back.
          if (!small_uncredited) {
            EXPECT_GT(s.credit_messages, 0u) << "credits were never returned explicitly";
          } else if (small_uncredited) {
            EXPECT_EQ(s.credit_messages, 0u) << "credits returned for messages that took none";
          }
        }
      },
      SettingList{{"RDMX_CREDITS", "4"}});
}

// Without RDMX_CREDITS the fabric chooses each connection's credit window (32 through
// shared memory, 24 over libfabric tcp, 64 otherwise): that many sends go out before the
// receiver takes any, and the rest wait for its credits, in order; the same where the
// receiver's buffers are a shared pool. Where small messages take no credit, the
// messages are larger than those.
TEST_P(EngineTest, TheFabricChoosesTheCreditWindow) {
  constexpr int kN = 80;
  const uint32_t window = caps().credit_window;
  const uint32_t bytes = caps().small_uncredited ? fabric::kUnbufferedMax + 4 : 4;
  run(2, [window, bytes](Rank& r) {
    uint32_t one = 0;
    if (r.rank == 1) {
      // The connection, opened by the receiver: the sender has spent none of its credits.
      EXPECT_EQ(r.finish(isend(r, 0, 1, &one, 4)).error, RDMX_OK);
      r.barrier();
      r.barrier();
      std::vector<uint32_t> got(bytes / 4);
      for (int i = 0; i < kN; ++i) {
        got[0] = ~0u;
        EXPECT_EQ(r.finish(irecv(r, 0, 2, got.data(), bytes)).error, RDMX_OK);
        EXPECT_EQ(got[0], uint32_t(i)) << "reordered or lost";
      }
    } else {
      EXPECT_EQ(r.finish(irecv(r, 1, 1, &one, 4)).error, RDMX_OK);
      r.barrier();
      // No progress between these sends: only the credits the receiver granted let any
      // of them go.
      std::vector<std::vector<uint32_t>> v(kN, std::vector<uint32_t>(bytes / 4));
      std::vector<rdmx_request_t*> q;
      uint32_t went = 0;
      for (int i = 0; i < kN; ++i) {
        v[size_t(i)][0] = uint32_t(i);
        rdmx_request_t* req = nullptr;
        ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 2, v[size_t(i)].data(), bytes,
                             RDMX_SEND_NO_REQUEST_IF_DONE, nullptr, nullptr, &req),
                  RDMX_OK);
        if (req)
          q.push_back(req);
        else
          ++went;
      }
      EXPECT_EQ(went, window) << "sends that went before the receiver returned any credit";
      r.barrier();
      for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
    }
  });
}

// Messages either side of the sizes that ride in a shared-memory queue entry (one slot:
// 16 bytes of payload, or 8 with control credits to return; six: 148, 124 for a
// synchronous send, which has the long header), interleaved with larger ones on one
// tag, some received as they come and the rest found unexpected, with 4 credits: each
// arrives whole and in order. Where the path carries small messages without a receive
// buffer, every small one went that way, and the credits they took came back all the
// same.
TEST_P(EngineTest, MessagesEitherSideOfTheInlineSizeKeepTheirOrder) {
  // Through shared memory a short message of up to 16 bytes of payload takes one slot;
  // otherwise a message's bytes (a 16-byte short header, or the 32-byte header and an
  // 8-byte sync tail, and the payload) take 24 bytes in an entry's first slot and 28 in
  // each after it: the sizes on either side of each slot's end, and of the largest
  // message carried without a buffer (fabric::kUnbufferedMax).
  constexpr uint64_t kShortMax = fabric::kUnbufferedMax - 16, kSyncMax = kShortMax - 24;
  // clang-format off
  static const std::vector<uint64_t> kSizes = {
      0,  1,  8,  9,  12,  13,  16,  17,  24,  25,  36,  37,
      64, 65, 92, 93, 100, 120, 121, kSyncMax, kSyncMax + 1, kShortMax, kShortMax + 1,
      3000};
  // clang-format on
  constexpr int kN = 250;
  constexpr uint64_t kMax = 3000;
  auto size_of = [](int i) { return kSizes[size_t(i) % kSizes.size()]; };
  auto sync_of = [](int i) { return i % 3 == 0; };
  uint64_t small = 0;
  for (int i = 0; i < kN; ++i) small += size_of(i) <= (sync_of(i) ? kSyncMax : kShortMax);
  bool unbuffered = caps().small_unbuffered;
  run(
      2,
      [&](Rank& r) {
        if (r.rank == 0) {
          std::vector<std::vector<uint8_t>> out(kN);
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            out[size_t(i)].resize(size_of(i));
            fill(out[size_t(i)], uint64_t(i));
            q.push_back(isend(r, 1, 7, out[size_t(i)].data(), size_of(i), 0,
                              sync_of(i) ? RDMX_SEND_SYNC : 0));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK) << rdmx_last_error(r.ctx);
          return;
        }
        std::vector<std::vector<uint8_t>> in(kN, std::vector<uint8_t>(kMax));
        auto receive = [&](int from, int to) {
          std::vector<rdmx_request_t*> q;
          for (int i = from; i < to; ++i) q.push_back(irecv(r, 0, 7, in[size_t(i)].data(), kMax));
          for (int i = from; i < to; ++i) {
            auto st = r.finish(q[size_t(i - from)]);
            EXPECT_EQ(st.error, RDMX_OK) << i;
            EXPECT_EQ(st.length, size_of(i)) << "message " << i << " reordered or cut";
            EXPECT_TRUE(check(in[size_t(i)].data(), size_of(i), uint64_t(i))) << i;
          }
        };
        receive(0, kN / 2);
        // Let the rest arrive before their receives (up to 2 s).
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (stats(r).unexpected == 0 && std::chrono::steady_clock::now() < until)
          rdmx_progress(r.ctx);
        EXPECT_GT(stats(r).unexpected, 0u);
        receive(kN / 2, kN);
        if (unbuffered)
          EXPECT_GE(stats(r).unbuffered_recvs, small);
        else
          EXPECT_EQ(stats(r).unbuffered_recvs, 0u);
      },
      SettingList{{"RDMX_CREDITS", "4"}});
}

// Small sends complete at once, and only one in a few asks the fabric for a completion:
// a rank that finalizes right after them must still get every one of them out.
TEST_P(EngineTest, SendsJustBeforeFinalizeArrive) {
  static constexpr int kN = 41;  // not a multiple of the signaling interval
  run(2, [](Rank& r) {
    if (r.rank == 0) {
      uint32_t first = 0;
      r.finish(isend(r, 1, 0, &first, sizeof first));  // connected from here on
      std::vector<uint32_t> v(kN);
      for (int i = 0; i < kN; ++i) {
        v[size_t(i)] = uint32_t(i + 1);
        EXPECT_EQ(r.finish(isend(r, 1, 1, &v[size_t(i)], sizeof v[0])).error, RDMX_OK);
      }
      EXPECT_EQ(rdmx_finalize(r.ctx), RDMX_OK);
      r.ctx = nullptr;
    } else {
      uint32_t got = ~0u;
      EXPECT_EQ(r.finish(irecv(r, 0, 0, &got, sizeof got)).error, RDMX_OK);
      // A receiver that falls behind: when it looks again the sender has finalized, and
      // all it sent (more than one poll's worth of completions) waits beside the news
      // of its going. It must be delivered first.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      for (int i = 0; i < kN; ++i) {
        auto st = r.finish(irecv(r, 0, 1, &got, sizeof got));
        ASSERT_EQ(st.error, RDMX_OK) << "message " << i << " of " << kN;
        EXPECT_EQ(got, uint32_t(i + 1));
      }
    }
  });
}

TEST_P(EngineTest, RandomizedStress) {
  // 100,000 messages in all where the fabric is fast; fewer on emulated RDMA.
  using Speed = Capabilities::Speed;
  Speed rate = caps().message_rate;
  int total = rate == Speed::High ? 100000 : rate == Speed::Medium ? 30000 : 3000;
  if (const char* n = std::getenv("RDMX_TEST_STRESS_MESSAGES")) total = std::atoi(n);
  run(3, [total](Rank& r) { stress(r, total / 6); });
}

// Ten ranks: each holds nine connections, past the eight that fabrics give their roomy
// shape (shared memory's larger segments, verbs' deep send queues); the ninth is lean,
// and the stress's windows of every protocol go through it as through the others (100
// messages a pair or more: past a lean verbs send queue of 63).
TEST_P(EngineTest, RandomizedStressPastTheRoomyConnections) {
  using Speed = Capabilities::Speed;
  Speed rate = caps().message_rate;
  int per_pair = rate == Speed::High ? 400 : rate == Speed::Medium ? 150 : 100;
  run(10, [per_pair](Rank& r) { stress(r, per_pair); });
}

}  // namespace
}  // namespace rdmx::test
