// Sends in place: where a fabric SENDs from memory it did not register (libfabric tcp;
// the loopback fabric with RDMX_LOOPBACK_SEND_IN_PLACE=1), an eager payload or a mid-size
// segment goes from the caller's buffer instead of a copy. The request is then done only
// when the fabric reports the send, and a send that fails completes with the error.
// (The engine suites run whole on "loopback-in-place" too: this file checks the timing.)
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/engine_test.h"
#include "fabric/loopback/loopback_faults.h"

namespace rdmx::test {
namespace {

class LoopbackInPlace : public ::testing::Test {
 protected:
  void SetUp() override { loopback::reset_faults(); }
  void TearDown() override { loopback::reset_faults(); }
};

const SettingList kInPlace{{"RDMX_LOOPBACK_SEND_IN_PLACE", "1"}};

// Whether req is done already (rdmx_test does not progress).
bool done_at_once(rdmx_request_t* req) {
  int done = 0;
  rdmx_status_info_t st{};
  EXPECT_EQ(rdmx_test(req, &done, &st), RDMX_OK);
  return done != 0;
}

TEST_F(LoopbackInPlace, ASendInPlaceIsDoneWhenTheFabricReportsIt) {
  loopback::faults().completion_delay = 20;  // a send's completion shows up 20 polls late
  for (bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "in place" : "copied");
    run_world(
        "loopback", 2,
        [in_place](Rank& r) {
          constexpr uint64_t kSize = 6000;  // above the inline limit, below the eager limit
          std::vector<uint8_t> b(kSize);
          if (r.rank == 0) {
            uint64_t hello = 1;  // the connection is open before the send that is timed
            EXPECT_EQ(r.finish(isend(r, 1, 1, &hello, sizeof hello)).error, RDMX_OK);
            fill(b, 1);
            auto* s = isend(r, 1, 0, b.data(), kSize);
            // Copied, the send is done when posted; in place, when its completion comes.
            EXPECT_EQ(done_at_once(s), !in_place);
            EXPECT_EQ(r.finish(s).error, RDMX_OK);
            EXPECT_EQ(stats(r).in_place_sends, in_place ? 1u : 0u);
            EXPECT_EQ(stats(r).eager_sends, 2u);
          } else {
            uint64_t hello = 0;
            EXPECT_EQ(r.finish(irecv(r, 0, 1, &hello, sizeof hello)).error, RDMX_OK);
            EXPECT_EQ(r.finish(irecv(r, 0, 0, b.data(), kSize)).error, RDMX_OK);
            EXPECT_TRUE(check(b.data(), kSize, 1));
          }
        },
        in_place ? kInPlace : SettingList{});
  }
}

// Below kInPlaceMin a copy costs less than waiting: such a payload is still copied.
TEST_F(LoopbackInPlace, SmallPayloadsAreStillCopied) {
  run_world(
      "loopback", 2,
      [](Rank& r) {
        std::vector<uint8_t> b(1000);
        if (r.rank == 0) {
          fill(b, 2);
          EXPECT_EQ(r.finish(isend(r, 1, 0, b.data(), b.size())).error, RDMX_OK);
          EXPECT_EQ(stats(r).in_place_sends, 0u);
        } else {
          EXPECT_EQ(r.finish(irecv(r, 0, 0, b.data(), b.size())).error, RDMX_OK);
          EXPECT_TRUE(check(b.data(), b.size(), 2));
        }
      },
      kInPlace);
}

// Every segment of a mid-size message goes in place; the message is done with the last.
TEST_F(LoopbackInPlace, MidSizeSegmentsGoInPlace) {
  loopback::faults().completion_delay = 5;
  SettingList s = kInPlace;
  s.push_back({"RDMX_EAGER_LIMIT", "8192"});
  s.push_back({"RDMX_MIDSIZE_LIMIT", "65536"});
  run_world(
      "loopback", 2,
      [](Rank& r) {
        constexpr uint64_t kSize = 40000;  // 5 segments: 4 x 8 KiB and 7232 bytes
        std::vector<uint8_t> b(kSize);
        if (r.rank == 0) {
          fill(b, 3);
          EXPECT_EQ(r.finish(isend(r, 1, 0, b.data(), kSize)).error, RDMX_OK);
          EXPECT_EQ(stats(r).segmented_sends, 1u);
          EXPECT_EQ(stats(r).in_place_sends, 5u);
        } else {
          EXPECT_EQ(r.finish(irecv(r, 0, 0, b.data(), kSize)).error, RDMX_OK);
          EXPECT_TRUE(check(b.data(), kSize, 3));
        }
      },
      s);
}

// The second of three sends in place fails on the wire: it and the third fail with the
// peer (nothing would report them), and the receiver hears of it. The first went out,
// but whether it is done or fails with the peer depends on whether the fabric reports
// its completion before the connection's failure (the loopback fabric reports
// connection events first).
TEST_F(LoopbackInPlace, ASendInPlaceThatFailsCompletesWithTheError) {
  run_world(
      "loopback", 2,
      [](Rank& r) {
        constexpr uint64_t kSize = 4000;
        std::vector<uint8_t> b(kSize);
        uint64_t hello = 1;  // the connection is open, and nothing else is sent, before
        if (r.rank == 0) {
          EXPECT_EQ(r.finish(isend(r, 1, 1, &hello, sizeof hello)).error, RDMX_OK);
          loopback::faults().error_at_send = loopback::faults().sends_posted + 2;
          fill(b, 4);
          rdmx_request_t* s[3];
          for (auto*& q : s) q = isend(r, 1, 0, b.data(), kSize);
          int first = r.finish(s[0], 10000).error;
          EXPECT_TRUE(first == RDMX_OK || first == RDMX_ERR_PEER_LOST) << first;
          EXPECT_EQ(r.finish(s[1], 10000).error, RDMX_ERR_PEER_LOST);
          EXPECT_EQ(r.finish(s[2], 10000).error, RDMX_ERR_PEER_LOST);
          EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("rank 1"), std::string::npos)
              << rdmx_last_error(r.ctx);
        } else {
          EXPECT_EQ(r.finish(irecv(r, 0, 1, &hello, sizeof hello)).error, RDMX_OK);
          // The first message arrived; whether this side reads it before it hears of the
          // failure is the fabric's order. The second never arrives.
          auto st = r.finish(irecv(r, 0, 0, b.data(), kSize), 10000);
          if (st.error == RDMX_OK) {
            EXPECT_TRUE(check(b.data(), kSize, 4));
            st = r.finish(irecv(r, 0, 0, b.data(), kSize), 10000);
          }
          EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST);
        }
      },
      kInPlace);
}

}  // namespace
}  // namespace rdmx::test
