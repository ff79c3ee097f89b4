// Many senders and one receiver: the receive memory a rank holds is sized by a pool
// where the backend shares one (RDMX_SRQ=1) and by the credit window per connection
// elsewhere; either way a receiver flooded by many peers loses nothing, and each
// sender's messages arrive in order.
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

// Every sender sends before the receiver takes anything, across eager sizes and one
// past most eager limits, with the smallest receive memory there is: four credits per
// connection (RDMX_CREDITS' least), or a shared pool of sixteen buffers (four windows),
// which the five senders' 200 messages find empty nearly every time. Their messages wait (in the
// fabric's queue, its RNR retry or the socket) and arrive whole and in order. Then
// after(receiver, its statistics before the flood) checks what became of its memory.
void flood_one_receiver(const std::string& backend,
                        const std::function<void(Rank&, const rdmx_stats_t&)>& after) {
  constexpr int kRanks = 6, kN = 40;
  static const std::vector<uint64_t> kSizes = {4, 100, 3000, 20000};
  auto size_of = [](int i) { return kSizes[size_t(i) % kSizes.size()]; };
  run_world(
      backend, kRanks,
      [&](Rank& r) {
        if (r.rank != 0) {
          std::vector<std::vector<uint8_t>> out(kN);
          std::vector<rdmx_request_t*> q;
          for (int i = 0; i < kN; ++i) {
            out[size_t(i)].resize(size_of(i));
            fill(out[size_t(i)], uint64_t(r.rank) * 1000 + uint64_t(i));
            q.push_back(isend(r, 0, i, out[size_t(i)].data(), out[size_t(i)].size()));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          r.barrier();
          return;
        }
        rdmx_stats_t before = stats(r);
        // Nothing progresses here for a while: every sender fills what it may.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::vector<std::vector<uint8_t>> in(size_t(kRanks) * kN);
        std::vector<rdmx_request_t*> q;
        for (int i = 0; i < kN; ++i)
          for (int src = 1; src < kRanks; ++src) {
            auto& b = in[size_t(src) * kN + size_t(i)];
            b.resize(size_of(i));
            q.push_back(irecv(r, src, RDMX_ANY_TAG, b.data(), b.size()));
          }
        size_t k = 0;
        for (int i = 0; i < kN; ++i)
          for (int src = 1; src < kRanks; ++src, ++k) {
            auto st = r.finish(q[k]);
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(st.tag, i) << "from rank " << src << ": reordered or lost";
            const auto& b = in[size_t(src) * kN + size_t(i)];
            EXPECT_TRUE(check(b.data(), b.size(), uint64_t(src) * 1000 + uint64_t(i)))
                << "message " << i << " from rank " << src << " arrived damaged";
          }
        after(r, before);
        r.barrier();
      },
      SettingList{{"RDMX_CREDITS", "4"}});
}

TEST_P(EngineTest, ManySendersToASlowReceiverLoseNothing) {
  bool shared = caps().shared_receive;
  flood_one_receiver(GetParam(), [&](Rank& r, const rdmx_stats_t&) {
    rdmx_stats_t s = stats(r);
    if (shared) {
      EXPECT_EQ(s.receive_buffer_bytes, 0u)
          << "connections hold receive buffers of their own beside the shared pool";
      EXPECT_GT(s.shared_receive_bytes, 0u);
    } else {
      EXPECT_GT(s.receive_buffer_bytes, 0u);
      EXPECT_EQ(s.shared_receive_bytes, 0u);
    }
  });
}

// The same flood leaves fewer than a quarter of the pool's sixteen buffers posted: where
// the fabric reports that (verbs' IBV_EVENT_SRQ_LIMIT_REACHED), the pool grows by a
// chunk of its first size, posted at once; elsewhere it keeps its size. Without a pool
// (receive buffers per connection) there is none to grow, whatever the flood.
TEST_P(EngineTest, ASharedPoolFoundRunningLowGrows) {
  bool shared = caps().shared_receive, grows = caps().shared_receive_grows;
  flood_one_receiver(GetParam(), [&](Rank& r, const rdmx_stats_t& before) {
    rdmx_stats_t s = stats(r);
    if (!shared) {
      EXPECT_EQ(before.shared_receive_bytes, 0u);
      EXPECT_EQ(s.shared_receive_bytes, 0u);
      EXPECT_EQ(s.shared_receive_growths, 0u);
      return;
    }
    ASSERT_GT(before.shared_receive_bytes, 0u);
    // The device's events are read between messages: give it a bounded while.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (grows && s.shared_receive_growths == 0 && std::chrono::steady_clock::now() < until) {
      rdmx_progress(r.ctx);
      s = stats(r);
    }
    if (grows) {
      EXPECT_GE(s.shared_receive_growths, 1u) << "the pool ran low and did not grow";
    } else {
      EXPECT_EQ(s.shared_receive_growths, 0u);
    }
    EXPECT_EQ(s.shared_receive_bytes, before.shared_receive_bytes * (1 + s.shared_receive_growths))
        << "the pool grows by chunks of its first size";
  });
}

}  // namespace
}  // namespace rdmx::test
