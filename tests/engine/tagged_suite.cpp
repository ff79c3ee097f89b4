// Tagged matching as libfabric defines it (rdmx_isend_tagged, rdmx_irecv_tagged): one
// 64-bit tag under an ignore mask, every tag value exact, mixed with posted receives,
// unexpected eager and rendezvous messages, probes, matched probes and cancel.
#include <vector>

#include "engine/engine_test.h"

namespace rdmx::test {
namespace {

constexpr uint64_t tag64(uint32_t cid, uint32_t tag) { return uint64_t(cid) << 32 | tag; }

rdmx_request_t* tsend(Rank& r, int dest, uint64_t tag, const void* buf, uint64_t len) {
  rdmx_request_t* req = nullptr;
  EXPECT_EQ(rdmx_isend_tagged(r.ctx, dest, tag, buf, len, 0, nullptr, nullptr, &req), RDMX_OK)
      << rdmx_last_error(r.ctx);
  return req;
}

rdmx_request_t* trecv(Rank& r, int src, uint64_t tag, uint64_t ignore, void* buf, uint64_t len) {
  rdmx_request_t* req = nullptr;
  EXPECT_EQ(rdmx_irecv_tagged(r.ctx, src, tag, ignore, buf, len, nullptr, nullptr, &req), RDMX_OK)
      << rdmx_last_error(r.ctx);
  return req;
}

uint64_t status_tag(const rdmx_status_info_t& st) { return tag64(st.context_id, uint32_t(st.tag)); }

TEST_P(EngineTest, TaggedReceivesMatchUnderAnIgnoreMask) {
  constexpr uint64_t kBig = 100000;  // a rendezvous on every backend
  const uint64_t tags[] = {
      tag64(5, 0x10),        // 0: to the masked receive posted first
      tag64(5, 0x80000000),  // 1: RDMX_ANY_TAG's value, exact here
      tag64(6, 0xffffffff),  // 2: -1 in the low half
      tag64(5, 0x11),        // 3
      tag64(7, 0x10),        // 4: kBig bytes
      tag64(5, 0x12),        // 5: to the exact receive posted first
  };
  run(2, [&](Rank& r) {
    if (r.rank == 1) {
      r.barrier();
      std::vector<uint8_t> big(kBig);
      fill(big, 4);
      std::vector<rdmx_request_t*> reqs;
      uint32_t v[6] = {0, 1, 2, 3, 4, 5};
      for (int i = 0; i < 6; ++i)
        reqs.push_back(i == 4 ? tsend(r, 0, tags[i], big.data(), kBig)
                              : tsend(r, 0, tags[i], &v[i], sizeof v[i]));
      for (auto* q : reqs) r.finish(q);
      r.barrier();
      return;
    }
    uint32_t a = 99, b = 99, v = 99;
    // Any source, any value in the low byte: the first message takes it.
    auto* ra = trecv(r, RDMX_ANY_SOURCE, tag64(5, 0), 0xff, &a, sizeof a);
    auto* rb = trecv(r, 1, tags[5], 0, &b, sizeof b);
    r.barrier();
    auto st = r.finish(ra);
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(status_tag(st), tags[0]);
    EXPECT_EQ(st.source, 1);
    st = r.finish(rb);  // the last message: every other one is unexpected now
    EXPECT_EQ(b, 5u);
    EXPECT_EQ(st.context_id, 5u);

    // A probe ignoring the context id finds the INT32_MIN tag; an exact receive takes it.
    int found = 0;
    rdmx_status_info_t pst{};
    ASSERT_EQ(rdmx_iprobe_tagged(r.ctx, 1, tag64(0, 0x80000000), ~0ull << 32, &found, &pst),
              RDMX_OK);
    ASSERT_EQ(found, 1);
    EXPECT_EQ(status_tag(pst), tags[1]);
    EXPECT_EQ(pst.length, sizeof v);
    st = r.finish(trecv(r, 1, tags[1], 0, &v, sizeof v));
    EXPECT_EQ(v, 1u);
    // Tags 0x10 or 0x11 in any context: the oldest waiting is message 3, then 4.
    st = r.finish(trecv(r, RDMX_ANY_SOURCE, tag64(0, 0x10), ~0ull << 32 | 1, &v, sizeof v));
    EXPECT_EQ(v, 3u);
    EXPECT_EQ(status_tag(st), tags[3]);
    // A matched probe claims the rendezvous message.
    rdmx_message_t* msg = nullptr;
    ASSERT_EQ(rdmx_improbe_tagged(r.ctx, 1, tag64(7, 0), 0xffffffff, &found, &msg, &pst), RDMX_OK);
    ASSERT_EQ(found, 1);
    EXPECT_EQ(pst.length, kBig);
    EXPECT_EQ(status_tag(pst), tags[4]);
    std::vector<uint8_t> big(kBig);
    rdmx_request_t* req = nullptr;
    ASSERT_EQ(rdmx_imrecv(r.ctx, msg, big.data(), big.size(), nullptr, nullptr, &req), RDMX_OK);
    st = r.finish(req);
    EXPECT_EQ(st.error, RDMX_OK);
    EXPECT_EQ(status_tag(st), tags[4]);
    EXPECT_TRUE(check(big.data(), kBig, 4));
    // -1 in the low half is a tag like any other.
    st = r.finish(trecv(r, 1, tags[2], 0, &v, sizeof v));
    EXPECT_EQ(v, 2u);
    EXPECT_EQ(st.tag, -1);
    // Nothing is left, whatever the mask; a masked receive waiting for nothing cancels.
    ASSERT_EQ(rdmx_iprobe_tagged(r.ctx, RDMX_ANY_SOURCE, 0, ~0ull, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 0);
    auto* rc = trecv(r, RDMX_ANY_SOURCE, 0, ~0ull, &v, sizeof v);
    ASSERT_EQ(rdmx_cancel(r.ctx, rc), RDMX_OK);
    EXPECT_EQ(r.finish(rc).error, RDMX_ERR_CANCELLED);
    r.barrier();
  });
}

// Between one sender's messages a masked receive could take, it takes the oldest, and
// receives under masks and exact ones posted in turn are served in post order.
TEST_P(EngineTest, TaggedMatchingKeepsSendAndPostOrder) {
  constexpr int kN = 64;
  run(2, [&](Rank& r) {
    if (r.rank == 1) {
      std::vector<uint32_t> v(kN);
      std::vector<rdmx_request_t*> reqs;
      for (int i = 0; i < kN; ++i) {
        v[size_t(i)] = uint32_t(i);
        reqs.push_back(tsend(r, 0, tag64(uint32_t(i % 3), uint32_t(i % 5)), &v[size_t(i)], 4));
      }
      for (auto* q : reqs) r.finish(q);
      return;
    }
    // Half posted before the messages come (alternating a mask and an exact tag that
    // the mask covers as well), half after.
    std::vector<uint32_t> got(kN, 999);
    std::vector<rdmx_request_t*> reqs;
    for (int i = 0; i < kN; ++i) {
      uint64_t t = tag64(uint32_t(i % 3), uint32_t(i % 5));
      reqs.push_back(i % 2 ? trecv(r, 1, t, 0, &got[size_t(i)], 4)
                           : trecv(r, RDMX_ANY_SOURCE, t, ~0ull, &got[size_t(i)], 4));
      if (i == kN / 2) r.finish(reqs.front());  // the rest of the first half arrives meanwhile
    }
    for (auto* q : reqs)
      if (q != reqs.front()) r.finish(q);
    for (int i = 0; i < kN; ++i) EXPECT_EQ(got[size_t(i)], uint32_t(i)) << "receive " << i;
  });
}

}  // namespace
}  // namespace rdmx::test
