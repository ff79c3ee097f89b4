// A receiver flooded with messages it has not asked for yet holds no more of their
// payloads than RDMX_UNEXPECTED_LIMIT and what its senders had in flight when it asked
// them for rendezvous; nothing is lost, nothing reordered, and a receive posted for a
// later message still completes first (MPI's progress rule).
#include <chrono>
#include <thread>
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

constexpr uint64_t kMessage = 4096;  // above the 256 bytes that still go eagerly
constexpr uint64_t kLimit = 64 << 10;
constexpr int kCredits = 4;

// Five senders put 40 messages of 4 KiB each (800 KB in all) to a receiver that posts
// no receive until every one has arrived, eagerly or as a rendezvous request.
TEST_P(EngineTest, AFloodedReceiverKeepsItsUnexpectedBytesNearItsBound) {
  constexpr int kRanks = 6, kN = 40;
  run(
      kRanks,
      [&](Rank& r) {
        if (r.rank != 0) {
          std::vector<std::vector<uint8_t>> out(kN, std::vector<uint8_t>(kMessage));
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            fill(out[size_t(i)], uint64_t(r.rank) * 1000 + uint64_t(i));
            q.push_back(isend(r, 0, i, out[size_t(i)].data(), kMessage));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          r.barrier();
          return;
        }
        // Every message arrives unexpected (as its payload or a rendezvous request).
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (stats(r).unexpected < uint64_t(kRanks - 1) * kN &&
               std::chrono::steady_clock::now() < until)
          rdmx_progress(r.ctx);
        rdmx_stats_t s = stats(r);
        ASSERT_EQ(s.unexpected, uint64_t(kRanks - 1) * kN) << "messages did not arrive";
        EXPECT_GE(s.rendezvous_asks, 1u);
        // What the senders may have had in flight when they heard: a window each (and a
        // receive pool's worth where the window is only permission).
        uint64_t slack = uint64_t(kRanks - 1) * (kCredits + 4) * kMessage;
        EXPECT_LE(s.unexpected_bytes, kLimit + slack)
            << "of " << (kRanks - 1) * kN * kMessage << " bytes sent";
        std::vector<std::vector<uint8_t>> in(size_t(kRanks) * kN, std::vector<uint8_t>(kMessage));
        std::vector<rdmx_request_t*> q;
        for (int i = 0; i < kN; ++i)
          for (int src = 1; src < kRanks; ++src)
            q.push_back(
                irecv(r, src, RDMX_ANY_TAG, in[size_t(src) * kN + size_t(i)].data(), kMessage));
        size_t k = 0;
        for (int i = 0; i < kN; ++i)
          for (int src = 1; src < kRanks; ++src, ++k) {
            auto st = r.finish(q[k]);
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(st.tag, i) << "from rank " << src << ": reordered or lost";
            EXPECT_TRUE(check(in[size_t(src) * kN + size_t(i)].data(), kMessage,
                              uint64_t(src) * 1000 + uint64_t(i)))
                << "message " << i << " from rank " << src << " arrived damaged";
          }
        EXPECT_EQ(stats(r).unexpected_bytes, 0u);
        r.barrier();
      },
      SettingList{{"RDMX_CREDITS", std::to_string(kCredits)},
                  {"RDMX_UNEXPECTED_LIMIT", std::to_string(kLimit)}});
}

// Rank 1 sends 100 messages of tag 1, then one of tag 2; rank 0, over its bound, asks
// for tag 2 first. Had the bound withheld rank 1's credits, tag 2 could never arrive.
TEST_P(EngineTest, OverTheBoundALaterMessageCanStillBeReceivedFirst) {
  constexpr int kN = 100;
  run(
      2,
      [&](Rank& r) {
        if (r.rank == 1) {
          std::vector<std::vector<uint8_t>> out(kN + 1, std::vector<uint8_t>(kMessage));
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i <= kN; ++i) {
            fill(out[size_t(i)], uint64_t(i));
            q.push_back(isend(r, 0, i < kN ? 1 : 2, out[size_t(i)].data(), kMessage));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          r.barrier();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        std::vector<uint8_t> last(kMessage);
        auto st = r.finish(irecv(r, 1, 2, last.data(), kMessage), 30000);
        ASSERT_EQ(st.error, RDMX_OK) << "the message behind the flood never came";
        EXPECT_TRUE(check(last.data(), kMessage, uint64_t(kN)));
        EXPECT_GE(stats(r).rendezvous_asks, 1u);
        std::vector<uint8_t> b(kMessage);
        for (int i = 0; i < kN; ++i) {
          st = r.finish(irecv(r, 1, 1, b.data(), kMessage));
          EXPECT_EQ(st.error, RDMX_OK);
          EXPECT_TRUE(check(b.data(), kMessage, uint64_t(i))) << "message " << i;
        }
        r.barrier();
      },
      SettingList{{"RDMX_CREDITS", std::to_string(kCredits)}, {"RDMX_UNEXPECTED_LIMIT", "16384"}});
}

}  // namespace
}  // namespace rdmx::test
