// Protocol behaviour: the eager/rendezvous crossover, chunked reads under the
// negotiated initiator depth, truncation, cancel, synchronous sends, zero bytes and
// very large messages.
#include <chrono>
#include <cstring>

#include "engine/engine_test.h"
#include "fabric/fabric.h"

namespace rdmx::test {
namespace {

TEST_P(EngineTest, EagerRendezvousCrossover) {
  constexpr uint64_t kLimit = 1024;
  run(
      2,
      [](Rank& r) {
        for (uint64_t size : {kLimit - 1, kLimit, kLimit + 1}) {
          std::vector<uint8_t> buf(size);
          if (r.rank == 0) {
            fill(buf, size);
            auto before = stats(r);
            r.finish(isend(r, 1, 1, buf.data(), size));
            auto after = stats(r);
            bool eager = size <= kLimit;
            EXPECT_EQ(after.eager_sends - before.eager_sends, eager ? 1u : 0u) << size;
            EXPECT_EQ(after.rndv_sends - before.rndv_sends, eager ? 0u : 1u) << size;
          } else {
            auto st = r.finish(irecv(r, 0, 1, buf.data(), size));
            EXPECT_EQ(st.error, RDMX_OK);
            EXPECT_EQ(st.length, size);
            EXPECT_TRUE(check(buf.data(), size, size)) << size;
          }
          r.barrier();
        }
      },
      SettingList{{"RDMX_EAGER_LIMIT", "1024"}, {"RDMX_MIDSIZE_LIMIT", "0"}});
}

// Ranks 0 and 2 would send up to 64 KiB eagerly, rank 1 only 8 KiB: every link agrees
// on the smaller limit, whether the message was queued before the connection (0 -> 1),
// sent by the side with the smaller limit (1 -> 0), or sent on a link the other side
// opened (2 -> 1). Nothing arrives longer than a receive buffer, and every byte is right.
// (No mid-size messages here: what is above the agreed limit goes by rendezvous.)
TEST_P(EngineTest, DifferentEagerLimitsAgreeOnTheSmaller) {
  run(
      3,
      [](Rank& r) {
        const std::vector<uint64_t> sizes = {8192, 8193, 32768, 65536};
        auto send_all = [&](int dest, uint32_t flags) {
          auto before = stats(r);
          std::vector<std::vector<uint8_t>> out;
          std::vector<rdmx_request_t*> q;
          for (uint64_t n : sizes) {
            out.emplace_back(n);
            fill(out.back(), n + uint64_t(r.rank));
            q.push_back(isend(r, dest, int(n), out.back().data(), n, 0, flags));
          }
          for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK) << rdmx_last_error(r.ctx);
          auto after = stats(r);
          EXPECT_EQ(after.eager_sends - before.eager_sends, 1u) << "to rank " << dest;
          EXPECT_EQ(after.rndv_sends - before.rndv_sends, sizes.size() - 1) << "to rank " << dest;
        };
        auto recv_all = [&](int src) {
          for (uint64_t n : sizes) {
            std::vector<uint8_t> in(n);
            auto st = r.finish(irecv(r, src, int(n), in.data(), n));
            EXPECT_EQ(st.error, RDMX_OK) << n << " bytes from rank " << src;
            EXPECT_EQ(st.length, n);
            EXPECT_TRUE(check(in.data(), n, n + uint64_t(src))) << n << " bytes from " << src;
          }
        };
        if (r.rank == 0) send_all(1, 0);  // queued while 0 connects to 1
        if (r.rank == 1) recv_all(0);
        r.barrier();
        if (r.rank == 1) send_all(0, RDMX_SEND_SYNC);
        if (r.rank == 0) recv_all(1);
        r.barrier();
        int token = 0;
        if (r.rank == 1) r.finish(isend(r, 2, 1, &token, sizeof token));  // 1 opens 1 -> 2
        if (r.rank == 2) r.finish(irecv(r, 1, 1, &token, sizeof token));
        r.barrier();
        if (r.rank == 2) send_all(1, 0);
        if (r.rank == 1) recv_all(2);
        r.barrier();
      },
      SettingList{{"RDMX_MIDSIZE_LIMIT", "0"}},
      [](int rank) {
        return SettingList{{"RDMX_EAGER_LIMIT", rank == 1 ? "8192" : "65536"}};
      });
}

TEST_P(EngineTest, ChunkedReadsStayWithinInitiatorDepth) {
  for (int depth : {1, 2, 16}) {
    SCOPED_TRACE("RDMX_MAX_RD_ATOMIC=" + std::to_string(depth));
    run(
        2,
        [depth](Rank& r) {
          constexpr uint64_t kSize = 1 << 20;  // 256 chunks of 4 KiB
          std::vector<uint8_t> buf(kSize);
          if (r.rank == 0) {
            fill(buf, 77);
            std::vector<rdmx_request_t*> q;
            for (int i = 0; i < 3; ++i) q.push_back(isend(r, 1, i, buf.data(), kSize));
            for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
          } else {
            std::vector<std::vector<uint8_t>> in(3, std::vector<uint8_t>(kSize));
            std::vector<rdmx_request_t*> q;
            for (int i = 0; i < 3; ++i) q.push_back(irecv(r, 0, i, in[size_t(i)].data(), kSize));
            for (int i = 0; i < 3; ++i) {
              EXPECT_EQ(r.finish(q[size_t(i)]).error, RDMX_OK);
              EXPECT_TRUE(check(in[size_t(i)].data(), kSize, 77));
            }
            auto s = stats(r);
            EXPECT_EQ(s.min_read_depth, uint64_t(depth));
            EXPECT_GE(s.rdma_reads, 3u * 256u);
            EXPECT_LE(s.max_reads_outstanding, uint64_t(depth));
            EXPECT_EQ(s.max_reads_outstanding, uint64_t(depth)) << "the window was not used";
          }
        },
        SettingList{{"RDMX_RNDV_CHUNK", "4096"}, {"RDMX_EAGER_LIMIT", "4096"}},
        [depth](int rank) {
          // Only one side caps: the negotiated depth is the minimum of both sides.
          return SettingList{{"RDMX_MAX_RD_ATOMIC", rank == 1 ? std::to_string(depth) : "64"}};
        });
  }
}

// A send that is complete on return makes no request when asked not to; any other
// makes one (before the connection, above the inline size, synchronous).
TEST_P(EngineTest, InlineSendsNeedNoRequest) {
  run(2, [](Rank& r) {
    constexpr uint32_t kNoReq = RDMX_SEND_NO_REQUEST_IF_DONE;
    std::vector<uint8_t> big(50000);
    fill(big, 4);
    uint64_t v[3] = {1, 2, 3};
    if (r.rank == 0) {
      rdmx_request_t* q = nullptr;
      // Not connected yet: the send waits, so it has a request.
      ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 1, &v[0], 8, kNoReq, nullptr, nullptr, &q), RDMX_OK);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(r.finish(q).error, RDMX_OK);
      r.barrier();                                // connected, and the receiver has posted the rest
      q = reinterpret_cast<rdmx_request_t*>(&v);  // overwritten with NULL
      ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 2, &v[1], 8, kNoReq, nullptr, nullptr, &q), RDMX_OK);
      EXPECT_EQ(q, nullptr) << "a small send on an open connection completes at once";
      v[1] = 99;  // the buffer is free again
      ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 3, big.data(), big.size(), kNoReq, nullptr, nullptr, &q),
                RDMX_OK);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(r.finish(q).error, RDMX_OK);
      ASSERT_EQ(rdmx_isend(r.ctx, 1, 0, 4, &v[2], 8, kNoReq | RDMX_SEND_SYNC, nullptr, nullptr, &q),
                RDMX_OK);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(r.finish(q).error, RDMX_OK);
      EXPECT_EQ(rdmx_isend(r.ctx, 1, 0, 5, &v[2], 8, 0x80, nullptr, nullptr, &q), RDMX_ERR_INVALID);
      EXPECT_NE(std::string(rdmx_last_error(r.ctx)).find("RDMX_SEND_NO_REQUEST_IF_DONE"),
                std::string::npos);
    } else {
      uint64_t got[3] = {};
      std::vector<uint8_t> in(big.size());
      EXPECT_EQ(r.finish(irecv(r, 0, 1, &got[0], 8)).error, RDMX_OK);
      rdmx_request_t* q[3] = {irecv(r, 0, 2, &got[1], 8), irecv(r, 0, 3, in.data(), in.size()),
                              irecv(r, 0, 4, &got[2], 8)};
      r.barrier();
      for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
      EXPECT_EQ(got[0], 1u);
      EXPECT_EQ(got[1], 2u);
      EXPECT_EQ(got[2], 3u);
      EXPECT_TRUE(check(in.data(), in.size(), 4));
    }
  });
}

TEST_P(EngineTest, TruncationKeepsWhatFits) {
  run(2, [](Rank& r) {
    for (uint64_t size : {uint64_t(100), uint64_t(200000)}) {
      std::vector<uint8_t> buf(size);
      if (r.rank == 0) {
        fill(buf, 5);
        EXPECT_EQ(r.finish(isend(r, 1, 2, buf.data(), size)).error, RDMX_OK);
      } else {
        std::vector<uint8_t> small(40);
        auto st = r.finish(irecv(r, 0, 2, small.data(), small.size()));
        EXPECT_EQ(st.error, RDMX_ERR_TRUNCATED);
        EXPECT_EQ(st.length, 40u);
        EXPECT_EQ(st.sent_length, size);
        EXPECT_TRUE(check(small.data(), 40, 5));
      }
      r.barrier();
    }
  });
}

TEST_P(EngineTest, CancelUnmatchedReceive) {
  run(2, [](Rank& r) {
    int v = 0;
    if (r.rank == 1) {
      auto* q = irecv(r, 0, 3, &v, sizeof v);
      ASSERT_EQ(rdmx_cancel(r.ctx, q), RDMX_OK);
      auto st = r.finish(q);
      EXPECT_EQ(st.error, RDMX_ERR_CANCELLED);
      r.barrier();
      st = r.finish(irecv(r, 0, 3, &v, sizeof v));
      EXPECT_EQ(st.error, RDMX_OK);
      EXPECT_EQ(v, 11);
    } else {
      r.barrier();
      v = 11;
      r.finish(isend(r, 1, 3, &v, sizeof v));
    }
  });
}

TEST_P(EngineTest, SynchronousSendWaitsForTheMatch) {
  run(2, [](Rank& r) {
    for (uint64_t size : {uint64_t(8), uint64_t(100000)}) {
      std::vector<uint8_t> buf(size);
      if (r.rank == 0) {
        fill(buf, 9);
        rdmx_request_t* q = nullptr;
        ASSERT_EQ(
            rdmx_isend(r.ctx, 1, 0, 4, buf.data(), size, RDMX_SEND_SYNC, nullptr, nullptr, &q),
            RDMX_OK);
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        int done = 0;
        while (std::chrono::steady_clock::now() < until) {
          rdmx_progress(r.ctx);
          rdmx_test(q, &done, nullptr);
          ASSERT_EQ(done, 0) << "a synchronous send completed before the receiver matched";
        }
        r.barrier();
        EXPECT_EQ(r.finish(q).error, RDMX_OK);
      } else {
        r.barrier();
        auto st = r.finish(irecv(r, 0, 4, buf.data(), size));
        EXPECT_EQ(st.error, RDMX_OK);
        EXPECT_TRUE(check(buf.data(), size, 9));
      }
      r.barrier();
    }
  });
}

TEST_P(EngineTest, ZeroByteMessages) {
  run(2, [](Rank& r) {
    if (r.rank == 0) {
      r.finish(isend(r, 1, 6, nullptr, 0));
      r.finish(isend(r, 1, 6, nullptr, 0, 0, RDMX_SEND_SYNC));
    } else {
      auto st = r.finish(irecv(r, 0, 6, nullptr, 0));
      EXPECT_EQ(st.error, RDMX_OK);
      EXPECT_EQ(st.length, 0u);
      int v = 5;
      st = r.finish(irecv(r, 0, RDMX_ANY_TAG, &v, sizeof v));
      EXPECT_EQ(st.error, RDMX_OK);
      EXPECT_EQ(st.length, 0u);
      EXPECT_EQ(v, 5);
    }
  });
}

TEST_P(EngineTest, SendToSelf) {
  run(1, [](Rank& r) {
    std::vector<uint8_t> big(50000), in(50000);
    fill(big, 8);
    int small = 3, got = 0;
    auto* s1 = isend(r, 0, 1, &small, sizeof small);
    auto* s2 = isend(r, 0, 1, big.data(), big.size());
    EXPECT_EQ(r.finish(irecv(r, 0, 1, &got, sizeof got)).error, RDMX_OK);
    EXPECT_EQ(got, 3);
    EXPECT_EQ(r.finish(irecv(r, RDMX_ANY_SOURCE, 1, in.data(), in.size())).error, RDMX_OK);
    EXPECT_TRUE(check(in.data(), in.size(), 8));
    r.finish(s1);
    r.finish(s2);
  });
}

// Large messages: 1 GiB where the fabric moves it in seconds; smaller on emulated RDMA.
TEST_P(EngineTest, LargeMessage) {
  uint64_t size = caps().bandwidth == Capabilities::Speed::High ? (1ull << 30) : (64ull << 20);
  run(2, [size](Rank& r) {
    std::vector<uint8_t> buf(size);
    // A sparse pattern: every 4 KiB page gets a distinct stamp.
    for (uint64_t i = 0; i < size; i += 4096) buf[i] = pattern(1, i);
    buf[size - 1] = 0x5a;
    if (r.rank == 0) {
      EXPECT_EQ(r.finish(isend(r, 1, 7, buf.data(), size), 600000).error, RDMX_OK);
    } else {
      std::fill(buf.begin(), buf.end(), 0);
      auto st = r.finish(irecv(r, 0, 7, buf.data(), size), 600000);
      EXPECT_EQ(st.error, RDMX_OK);
      EXPECT_EQ(st.length, size);
      bool ok = buf[size - 1] == 0x5a;
      for (uint64_t i = 0; i < size && ok; i += 4096) ok = buf[i] == pattern(1, i);
      EXPECT_TRUE(ok);
    }
  });
}

// Without RDMX_RNDV_CHUNK the fabric chooses how much one rendezvous READ carries
// (4 MiB through shared memory, 1 MiB where nothing suggests less, 64 KiB on a software
// RDMA device), and may read a message that is alone in smaller pieces (libfabric tcp):
// a 9 MiB message takes that many reads, and arrives whole.
TEST_P(EngineTest, RendezvousReadsComeInTheFabricsChunks) {
  const uint64_t chunk = caps().lone_read_chunk ? caps().lone_read_chunk : caps().read_chunk;
  run(2, [chunk](Rank& r) {
    constexpr uint64_t kSize = 9u << 20;
    std::vector<uint8_t> buf(kSize);
    if (r.rank == 0) {
      fill(buf, 21);
      EXPECT_EQ(r.finish(isend(r, 1, 5, buf.data(), kSize)).error, RDMX_OK);
    } else {
      EXPECT_EQ(r.finish(irecv(r, 0, 5, buf.data(), kSize)).error, RDMX_OK);
      EXPECT_TRUE(check(buf.data(), kSize, 21));
      uint64_t reads = stats(r).rdma_reads;
      if (chunk) {
        EXPECT_EQ(reads, (kSize + chunk - 1) / chunk);
      } else {  // over verbs: by the device
        EXPECT_TRUE(reads == kSize / fabric::kDefaultRndvChunk ||
                    reads == kSize / fabric::kSoftwareDeviceRndvChunk)
            << reads << " reads";
      }
    }
  });
}

// A message whose READs start while another's are in flight is read in the fabric's
// whole chunks, whatever the first one was read in. The three requests-to-send are all
// waiting when the receives are posted, back to back: the first starts alone, the
// other two behind it.
TEST_P(EngineTest, RendezvousBehindAnotherReadsInWholeChunks) {
  const uint64_t lone = caps().lone_read_chunk ? caps().lone_read_chunk : caps().read_chunk;
  const uint64_t chunk = caps().read_chunk;
  run(2, [lone, chunk](Rank& r) {
    constexpr uint64_t kSize = 4u << 20;
    constexpr int kMessages = 3;
    std::vector<std::vector<uint8_t>> bufs(kMessages, std::vector<uint8_t>(kSize));
    if (r.rank == 0) {
      std::vector<rdmx_request_t*> q;
      for (int i = 0; i < kMessages; ++i) {
        fill(bufs[size_t(i)], uint8_t(30 + i));
        q.push_back(isend(r, 1, 6, bufs[size_t(i)].data(), kSize));
      }
      r.barrier();
      for (auto* x : q) EXPECT_EQ(r.finish(x).error, RDMX_OK);
    } else {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (stats(r).unexpected < uint64_t(kMessages) &&
             std::chrono::steady_clock::now() < deadline)
        rdmx_progress(r.ctx);
      ASSERT_EQ(stats(r).unexpected, uint64_t(kMessages)) << "the requests-to-send never came";
      std::vector<rdmx_request_t*> q;
      for (int i = 0; i < kMessages; ++i)
        q.push_back(irecv(r, 0, 6, bufs[size_t(i)].data(), kSize));
      r.barrier();
      for (int i = 0; i < kMessages; ++i) {
        EXPECT_EQ(r.finish(q[size_t(i)]).error, RDMX_OK);
        EXPECT_TRUE(check(bufs[size_t(i)].data(), kSize, uint8_t(30 + i))) << "message " << i;
      }
      uint64_t reads = stats(r).rdma_reads;
      if (chunk) {
        EXPECT_EQ(reads,
                  (kSize + lone - 1) / lone + (kMessages - 1) * ((kSize + chunk - 1) / chunk));
      } else {  // over verbs: by the device, the same for all three
        EXPECT_TRUE(reads == kMessages * kSize / fabric::kDefaultRndvChunk ||
                    reads == kMessages * kSize / fabric::kSoftwareDeviceRndvChunk)
            << reads << " reads";
      }
    }
  });
}

}  // namespace
}  // namespace rdmx::test
