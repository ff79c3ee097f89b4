// How a rank connects to many peers at once (engine_connect.h): at most kMaxDialing of
// its own connects in flight, the rest started as those end; and a peer that refuses a
// connection for want of resources asked again, with backoff, within the time limit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_test.h"
#include "fabric/loopback/loopback_faults.h"

namespace rdmx::test {
namespace {

class ConnectWaves : public ::testing::Test {
 protected:
  void SetUp() override { loopback::reset_faults(); }
  void TearDown() override { loopback::reset_faults(); }
};

// Rank 0 sends to 99 peers at once, more than the 64 connects it may have in flight:
// the rest wait for a slot, and every message arrives.
TEST_F(ConnectWaves, ARankSendingToMorePeersThanItsConnectsInFlightReachesAll) {
  constexpr int kRanks = 100;
  run_world("loopback", kRanks, [](Rank& r) {
    uint64_t v = 0;
    if (r.rank == 0) {
      std::vector<uint64_t> out(kRanks);
      std::vector<rdmx_request_t*> sends;
      for (int p = 1; p < kRanks; ++p) {
        out[size_t(p)] = uint64_t(p) * 7919;
        sends.push_back(isend(r, p, 3, &out[size_t(p)], sizeof(uint64_t)));
      }
      for (auto* s : sends) EXPECT_EQ(r.finish(s, 60000).error, RDMX_OK);
      EXPECT_EQ(stats(r).connections, uint64_t(kRanks - 1));
    } else {
      auto st = r.finish(irecv(r, 0, 3, &v, sizeof v), 60000);
      EXPECT_EQ(st.error, RDMX_OK) << "rank " << r.rank;
      EXPECT_EQ(v, uint64_t(r.rank) * 7919);
    }
    r.barrier();
  });
}

// Rank 0 cannot set up the next three connections offered to it (its descriptors or
// memory ran out): rank 1 is refused three times, asks again after 10, 20 and 40 ms
// (jittered), and its message arrives.
TEST_F(ConnectWaves, APeerOutOfResourcesIsAskedAgainWithBackoff) {
  loopback::faults().refuse_accepts = 3;
  run_world("loopback", 2, [](Rank& r) {
    uint64_t v = 41;
    if (r.rank == 1) {
      auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(r.finish(isend(r, 0, 1, &v, sizeof v), 20000).error, RDMX_OK)
          << rdmx_last_error(r.ctx);
      EXPECT_EQ(stats(r).connect_retries, 3u);
      EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(35));
    } else {
      uint64_t got = 0;
      EXPECT_EQ(r.finish(irecv(r, 1, 1, &got, sizeof got), 20000).error, RDMX_OK);
      EXPECT_EQ(got, 41u);
    }
    r.barrier();
  });
}

// A peer that stays out of resources is given up when the attempt's time limit
// (RDMX_CONNECT_TIMEOUT_MS) would pass, with the reason in words.
TEST_F(ConnectWaves, APeerThatStaysOutOfResourcesIsGivenUpWithinTheTimeLimit) {
  loopback::faults().refuse_accepts = 1000000;
  run_world(
      "loopback", 2,
      [](Rank& r) {
        uint64_t v = 5;
        if (r.rank == 1) {
          auto t0 = std::chrono::steady_clock::now();
          // Refused at the last attempt that fits, or timed out while it was made.
          int e = r.finish(isend(r, 0, 1, &v, sizeof v), 20000).error;
          EXPECT_TRUE(e == RDMX_ERR_REJECTED || e == RDMX_ERR_TIMEOUT) << e;
          EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
          EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("out of resources"), std::string::npos)
              << rdmx_last_error(r.ctx);
          EXPECT_GT(stats(r).connect_retries, 2u);
        }
        r.barrier();
      },
      SettingList{{"RDMX_CONNECT_TIMEOUT_MS", "600"}});
}

// Rank 1 connects, then is away (off the processor, as oversubscribed ranks are) until
// past its time limit, while rank 0 accepts. Its next progress call, doing its upkeep
// first, takes the accept that waited for it instead of judging the attempt lost.
TEST_F(ConnectWaves, AnAcceptThatCameWhileTheRankWasAwayIsTakenBeforeTheLimitIsJudged) {
  std::atomic<bool> accepted{false};
  run_world(
      "loopback", 2,
      [&](Rank& r) {
        uint64_t v = 17;
        if (r.rank == 1) {
          rdmx_request_t* s = isend(r, 0, 1, &v, sizeof v);
          auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (!accepted.load() && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          ASSERT_TRUE(accepted.load());
          std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the limit
          rdmx_wait_event(r.ctx, 0);  // its next progress call does the upkeep first
          EXPECT_EQ(r.finish(s, 5000).error, RDMX_OK) << rdmx_last_error(r.ctx);
          EXPECT_EQ(stats(r).connections, 1u);
        } else {
          auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (stats(r).connections == 0 && std::chrono::steady_clock::now() < give_up)
            rdmx_progress(r.ctx);
          accepted = true;
          uint64_t got = 0;
          EXPECT_EQ(r.finish(irecv(r, 1, 1, &got, sizeof got), 5000).error, RDMX_OK);
          EXPECT_EQ(got, 17u);
        }
        r.barrier();
      },
      SettingList{{"RDMX_CONNECT_TIMEOUT_MS", "200"}});
}

}  // namespace
}  // namespace rdmx::test
