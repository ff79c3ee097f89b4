// The mid-size protocol (engine_segment.h): messages above the eager limit and up to
// RDMX_MIDSIZE_LIMIT go in eager-limit segments, matched on the first one, whether the
// receive was posted first or the message arrived unexpected, in order with the
// messages around them, cut to a short receive, and only up to what both sides accept.
#include <chrono>
#include <cstring>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

// 4 KiB pieces up to 64 KiB: sizes on either side of each boundary.
const SettingList kMidsize = {{"RDMX_EAGER_LIMIT", "4096"}, {"RDMX_MIDSIZE_LIMIT", "65536"}};

// Waits (progressing) until a message from src with tag has arrived whole.
void await_arrival(Rank& r, int src, int tag) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int found = 0;
  while (!found && std::chrono::steady_clock::now() < until)
    rdmx_iprobe(r.ctx, src, 0, tag, &found, nullptr);
  ASSERT_TRUE(found) << "no message with tag " << tag << " from rank " << src;
}

TEST_P(EngineTest, MidSizeMessagesGoInSegments) {
  // Tags are the sizes mod 1000; 65537 goes by rendezvous, the last.
  const std::vector<uint64_t> sizes = {4096, 4097, 8192, 12289, 65535, 65536, 65537};
  run(
      2,
      [&](Rank& r) {
        for (bool posted_first : {true, false}) {
          SCOPED_TRACE(posted_first ? "receives posted first" : "messages unexpected");
          if (r.rank == 0) {
            if (posted_first) r.barrier();
            auto before = stats(r);
            std::vector<std::vector<uint8_t>> out;
            std::vector<rdmx_request_t*> q;
            for (uint64_t n : sizes) {
              out.emplace_back(n);
              fill(out.back(), n);
              q.push_back(isend(r, 1, int(n % 1000), out.back().data(), n));
            }
            for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK) << rdmx_last_error(r.ctx);
            auto after = stats(r);
            EXPECT_EQ(after.segmented_sends - before.segmented_sends, 5u);
            EXPECT_EQ(after.rndv_sends - before.rndv_sends, 1u);
          } else {
            std::vector<std::vector<uint8_t>> in;
            std::vector<rdmx_request_t*> q;
            // Unexpected: every message before the rendezvous one has arrived whole.
            if (!posted_first) await_arrival(r, 0, 536);
            for (uint64_t n : sizes) {
              in.emplace_back(n);
              q.push_back(irecv(r, 0, int(n % 1000), in.back().data(), n));
            }
            if (posted_first) r.barrier();
            for (size_t i = 0; i < sizes.size(); ++i) {
              auto st = r.finish(q[i]);
              EXPECT_EQ(st.error, RDMX_OK) << sizes[i];
              EXPECT_EQ(st.length, sizes[i]);
              EXPECT_TRUE(check(in[i].data(), sizes[i], sizes[i])) << sizes[i] << " bytes";
            }
            if (!posted_first) {
              EXPECT_GE(stats(r).unexpected, 6u);
            }
          }
          r.barrier();
        }
      },
      kMidsize);
}

// Mid-size messages between small and large ones of one tag keep their order, and a
// wildcard receive takes them in that order.
TEST_P(EngineTest, MidSizeMessagesKeepTheirOrder) {
  const std::vector<uint64_t> sizes = {8, 20000, 100000, 16, 40000, 9000, 0, 65536};
  run(
      2,
      [&](Rank& r) {
        constexpr int kRounds = 20;
        if (r.rank == 0) {
          std::vector<std::vector<uint8_t>> out;
          std::vector<rdmx_request_t*> q;
          for (int round = 0; round < kRounds; ++round)
            for (size_t i = 0; i < sizes.size(); ++i) {
              out.emplace_back(sizes[i]);
              fill(out.back(), uint64_t(round) * 100 + i);
              q.push_back(isend(r, 1, 9, out.back().data(), sizes[i]));
            }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK) << rdmx_last_error(r.ctx);
        } else {
          std::vector<uint8_t> in(100000);
          for (int round = 0; round < kRounds; ++round)
            for (size_t i = 0; i < sizes.size(); ++i) {
              auto st = r.finish(irecv(r, RDMX_ANY_SOURCE, RDMX_ANY_TAG, in.data(), in.size()));
              ASSERT_EQ(st.error, RDMX_OK);
              ASSERT_EQ(st.length, sizes[i]) << "round " << round << ", message " << i;
              EXPECT_TRUE(check(in.data(), sizes[i], uint64_t(round) * 100 + i));
            }
        }
      },
      kMidsize);
}

// A receive shorter than a mid-size message keeps what fits, posted first or not.
TEST_P(EngineTest, MidSizeTruncationKeepsWhatFits) {
  run(
      2,
      [](Rank& r) {
        constexpr uint64_t kSize = 30000;
        for (uint64_t cap : {uint64_t(100), uint64_t(9000)}) {
          bool posted_first = cap < 1000;
          std::vector<uint8_t> buf(kSize);
          if (r.rank == 0) {
            if (posted_first) r.barrier();
            fill(buf, cap);
            EXPECT_EQ(r.finish(isend(r, 1, int(cap), buf.data(), kSize)).error, RDMX_OK);
          } else {
            std::vector<uint8_t> small(cap + 16, 0xee);
            if (!posted_first) await_arrival(r, 0, int(cap));
            auto* q = irecv(r, 0, int(cap), small.data(), cap);
            if (posted_first) r.barrier();
            auto st = r.finish(q);
            EXPECT_EQ(st.error, RDMX_ERR_TRUNCATED);
            EXPECT_EQ(st.length, cap);
            EXPECT_EQ(st.sent_length, kSize);
            EXPECT_TRUE(check(small.data(), cap, cap));
            EXPECT_EQ(small[cap], 0xee) << "written past the receive buffer";
          }
          r.barrier();
        }
      },
      kMidsize);
}

// Rank 1 accepts mid-size messages up to 16 KiB, rank 0 up to 64 KiB: both directions
// agree on 16 KiB, and what is above goes by rendezvous.
TEST_P(EngineTest, DifferentMidSizeLimitsAgreeOnTheSmaller) {
  run(
      2,
      [](Rank& r) {
        const std::vector<uint64_t> sizes = {16384, 16385, 32768};
        int peer = 1 - r.rank;
        for (int sender = 0; sender < 2; ++sender) {
          if (r.rank == sender) {
            auto before = stats(r);
            std::vector<std::vector<uint8_t>> out;
            std::vector<rdmx_request_t*> q;
            for (uint64_t n : sizes) {
              out.emplace_back(n);
              fill(out.back(), n + uint64_t(sender));
              q.push_back(isend(r, peer, int(n), out.back().data(), n));
            }
            for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
            auto after = stats(r);
            EXPECT_EQ(after.segmented_sends - before.segmented_sends, 1u) << "from " << sender;
            EXPECT_EQ(after.rndv_sends - before.rndv_sends, 2u) << "from " << sender;
          } else {
            for (uint64_t n : sizes) {
              std::vector<uint8_t> in(n);
              auto st = r.finish(irecv(r, peer, int(n), in.data(), n));
              EXPECT_EQ(st.error, RDMX_OK);
              EXPECT_TRUE(check(in.data(), n, n + uint64_t(sender))) << n;
            }
          }
          r.barrier();
        }
      },
      {{"RDMX_EAGER_LIMIT", "4096"}},
      [](int rank) {
        return SettingList{{"RDMX_MIDSIZE_LIMIT", rank == 1 ? "16384" : "65536"}};
      });
}

// With the fabric's own limits (no settings), every size arrives whole, whatever the
// fabric chose to send eagerly, in segments or by rendezvous.
TEST_P(EngineTest, FabricLimitsCarryEverySize) {
  run(2, [](Rank& r) {
    for (uint64_t n = 1; n <= (uint64_t(1) << 18); n = n * 2 + 1) {
      std::vector<uint8_t> buf(n);
      if (r.rank == 0) {
        fill(buf, n);
        EXPECT_EQ(r.finish(isend(r, 1, 3, buf.data(), n)).error, RDMX_OK) << n;
      } else {
        auto st = r.finish(irecv(r, 0, 3, buf.data(), n));
        EXPECT_EQ(st.error, RDMX_OK) << n;
        EXPECT_EQ(st.length, n);
        EXPECT_TRUE(check(buf.data(), n, n)) << n << " bytes";
      }
    }
  });
}

}  // namespace
}  // namespace rdmx::test
