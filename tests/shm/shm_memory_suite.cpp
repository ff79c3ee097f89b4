// What a shared-memory connection holds: a rank's first connections get the roomy
// window (32 credits, mid-size segments), the rest a lean one (8 credits, larger
// messages by rendezvous), and the staging area of copy reads is allocated only by a
// connection that reads by copies.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"
#include "harness/child_rank.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {
namespace {

class ShmMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("shm");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend shm: " << why;
  }
};

// Sends n bytes from a (rank `from`) to b (rank `to`), receives them and checks them.
void exchange(rdmx_context_t* a, int to, rdmx_context_t* b, int from, size_t n, int tag) {
  std::vector<uint8_t> out(n), in(n, 0);
  for (size_t i = 0; i < n; ++i) out[i] = uint8_t(i * 13 + size_t(tag));
  rdmx_request_t *s = nullptr, *r = nullptr;
  rdmx_status_info_t st{};
  ASSERT_EQ(rdmx_irecv(b, from, 0, tag, in.data(), n, nullptr, nullptr, &r), RDMX_OK);
  ASSERT_EQ(rdmx_isend(a, to, 0, tag, out.data(), n, 0, nullptr, nullptr, &s), RDMX_OK);
  ASSERT_TRUE(drive({a, b}, r, &st, 10000));
  EXPECT_EQ(st.error, RDMX_OK);
  ASSERT_TRUE(drive({a, b}, s, &st, 10000));
  EXPECT_TRUE(in == out) << n << " bytes from rank " << from << " to rank " << to;
  rdmx_request_free(a, s);
  rdmx_request_free(b, r);
}

void introduce(rdmx_context_t* a, int ra, rdmx_context_t* b, int rb) {
  std::vector<uint8_t> aa = address_of(a), ba = address_of(b);
  ASSERT_EQ(rdmx_add_peer(a, rb, ba.data(), ba.size()), RDMX_OK);
  ASSERT_EQ(rdmx_add_peer(b, ra, aa.data(), aa.size()), RDMX_OK);
}

// Sends of `bytes` (each needing a receive buffer) that rank `from` gets onto the
// connection to rank 0 before rank 0 returns any credit: rank 0's window.
uint32_t window_towards(rdmx_context_t* zero, rdmx_context_t* c, int from, uint32_t bytes) {
  constexpr int kN = 48;
  std::vector<std::vector<uint8_t>> v(kN, std::vector<uint8_t>(bytes, 1));
  std::vector<rdmx_request_t*> q;
  uint32_t went = 0;
  for (int i = 0; i < kN; ++i) {
    rdmx_request_t* req = nullptr;
    EXPECT_EQ(rdmx_isend(c, 0, 0, 40 + from, v[size_t(i)].data(), bytes,
                         RDMX_SEND_NO_REQUEST_IF_DONE, nullptr, nullptr, &req),
              RDMX_OK);
    if (req)
      q.push_back(req);
    else
      ++went;
  }
  std::vector<uint8_t> in(bytes);
  rdmx_status_info_t st{};
  for (int i = 0; i < kN; ++i) {
    rdmx_request_t* r = nullptr;
    EXPECT_EQ(rdmx_irecv(zero, from, 0, 40 + from, in.data(), bytes, nullptr, nullptr, &r),
              RDMX_OK);
    EXPECT_TRUE(drive({zero, c}, r, &st, 10000));
    rdmx_request_free(zero, r);
  }
  for (auto* x : q) {
    EXPECT_TRUE(drive({zero, c}, x, &st, 10000));
    rdmx_request_free(c, x);
  }
  return went;
}

// Rank 0 connects to ten peers in turn (it is the active side each time, so each
// connection is the first of its peer's). Its first eight connections are roomy, the
// ninth and tenth lean: a peer gets 32 sends onto one of the first before rank 0 returns
// a credit and 8 onto one of the others, and a 16 KiB message goes in segments on the
// first and by rendezvous on the others; every message arrives whole.
TEST_F(ShmMemory, ConnectionsBeyondTheFirstEightAreLean) {
  constexpr int kPeers = 10;
  std::vector<rdmx_context_t*> ctx(kPeers + 1, nullptr);
  for (int i = 0; i <= kPeers; ++i) {
    ctx[size_t(i)] = open_rank("shm", i, kPeers + 1, 21);
    ASSERT_NE(ctx[size_t(i)], nullptr);
  }
  for (int i = 1; i <= kPeers; ++i) {
    introduce(ctx[0], 0, ctx[size_t(i)], i);
    exchange(ctx[0], i, ctx[size_t(i)], 0, 8, 1);  // opened by rank 0, one at a time
  }
  const uint32_t buffered = shm::Arrival::kInlineMax + 4;  // too big for the queue entry
  EXPECT_EQ(window_towards(ctx[0], ctx[1], 1, buffered), 32u) << "rank 0's first connection";
  EXPECT_EQ(window_towards(ctx[0], ctx[8], 8, buffered), 32u) << "rank 0's eighth connection";
  EXPECT_EQ(window_towards(ctx[0], ctx[9], 9, buffered), 8u) << "rank 0's ninth connection";
  EXPECT_EQ(window_towards(ctx[0], ctx[10], 10, buffered), 8u) << "rank 0's tenth connection";

  rdmx_stats_t before{}, after{};
  rdmx_get_stats(ctx[1], &before);
  exchange(ctx[1], 0, ctx[0], 1, 16384, 2);
  rdmx_get_stats(ctx[1], &after);
  EXPECT_EQ(after.segmented_sends - before.segmented_sends, 1u) << "roomy: in segments";
  rdmx_get_stats(ctx[9], &before);
  exchange(ctx[9], 0, ctx[0], 9, 16384, 2);
  rdmx_get_stats(ctx[9], &after);
  EXPECT_EQ(after.segmented_sends - before.segmented_sends, 0u) << "lean: no segments";
  EXPECT_EQ(after.rndv_sends - before.rndv_sends, 1u) << "lean: by rendezvous";
  for (auto* c : ctx) rdmx_finalize(c);
}

// A pair whose reads go by copies (RDMX_SHM_READ=copy) allocates its staging area at the
// first read and moves every byte through it. Where that allocation fails (a full
// memory limit), the receive fails with a reason that says so, never a SIGBUS.
TEST_F(ShmMemory, CopyReadsReserveTheirStagingAreaOrFailClearly) {
  for (bool refused : {false, true}) {
    SettingList copy{{"RDMX_SHM_READ", "copy"}};
    rdmx_context_t* a = open_rank("shm", 0, 2, refused ? 23 : 22, copy);
    rdmx_context_t* b = open_rank("shm", 1, 2, refused ? 23 : 22, copy);
    ASSERT_TRUE(a && b);
    introduce(a, 0, b, 1);
    exchange(a, 1, b, 0, 8, 1);
    shm::faults().staging_refused = refused;
    const size_t n = (1 << 20) + 3;  // by rendezvous, in several staging slots
    std::vector<uint8_t> out(n, 7), in(n, 0);
    rdmx_request_t *s = nullptr, *r = nullptr;
    rdmx_status_info_t st{};
    ASSERT_EQ(rdmx_irecv(b, 0, 0, 3, in.data(), n, nullptr, nullptr, &r), RDMX_OK);
    ASSERT_EQ(rdmx_isend(a, 1, 0, 3, out.data(), n, 0, nullptr, nullptr, &s), RDMX_OK);
    ASSERT_TRUE(drive({a, b}, r, &st, 10000)) << "the receive never completed";
    if (!refused) {
      EXPECT_EQ(st.error, RDMX_OK);
      EXPECT_TRUE(in == out);
    } else {
      EXPECT_NE(st.error, RDMX_OK);
      std::string why = rdmx_last_error(b);
      EXPECT_NE(why.find("copy reads"), std::string::npos) << why;
      EXPECT_NE(why.find("memory"), std::string::npos) << why;
    }
    drive({a, b}, s, &st, 10000);
    shm::faults().staging_refused = false;
    rdmx_request_free(a, s);
    rdmx_request_free(b, r);
    rdmx_finalize(a);
    rdmx_finalize(b);
  }
}

}  // namespace
}  // namespace rdmx::test
