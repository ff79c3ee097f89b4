// What an outsider can do with connection requests, tried through a raw loopback
// endpoint: a recorded request sent again is refused, and a request that does not
// prove membership changes nothing for the rank it claims to be.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/world.h"
#include "loopback/raw_peer.h"
#include "protocol/connect_msg.h"

namespace rdmx::test {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";

rdmx_context_t* member(int rank) {
  OwnedSettings s(SettingList{{"RDMX_JOB_SECRET", kSecret}});
  rdmx_init_params_t p{rank, 2, "loopback", 5, s.get()};
  rdmx_context_t* c = nullptr;
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_OK) << rdmx_last_error(nullptr);
  return c;
}

SipKey secret_key() {
  uint8_t b[16];
  for (int i = 0; i < 16; ++i)
    b[i] = uint8_t(std::stoul(std::string(kSecret + 2 * i, 2), nullptr, 16));
  return protocol::secret_mac_key(b, sizeof b);
}

protocol::CmMessage request_from_rank1(const SipKey& key) {
  protocol::CmMessage m = protocol::make_cm(protocol::CmKind::Connect, 1, 0);
  m.credits = 8;
  m.ctrl_credits = 1;
  protocol::fresh_nonce(m);
  protocol::seal(m, key, nullptr);
  return m;
}

TEST(Membership, ARecordedRequestSentAgainIsRefused) {
  rdmx_context_t* c = member(0);
  ASSERT_TRUE(c);
  protocol::CmMessage m = request_from_rank1(secret_key());
  RawOutcome first = raw_connect_outcome(c, &m, sizeof m);
  EXPECT_TRUE(first.established) << "a member's request was not accepted";
  RawOutcome again = raw_connect_outcome(c, &m, sizeof m);
  ASSERT_TRUE(again.rejected) << "a replayed request was accepted";
  EXPECT_EQ(again.reply.reason, protocol::RejectReason::Replayed);
  rdmx_finalize(c);
}

TEST(Membership, AnOutsiderCannotMarkAGenuinePeerFailed) {
  rdmx_context_t* c[2] = {member(0), member(1)};
  ASSERT_TRUE(c[0] && c[1]);
  // Requests claiming to be rank 1, sealed with the job key (a label) or a guess.
  SipKey guesses[] = {protocol::job_key_mac_key(5), SipKey{1, 2}};
  for (const SipKey& k : guesses) {
    protocol::CmMessage m = request_from_rank1(k);
    RawOutcome o = raw_connect_outcome(c[0], &m, sizeof m);
    ASSERT_TRUE(o.rejected);
    EXPECT_EQ(o.reply.reason, protocol::RejectReason::WrongJob);
  }
  // The genuine rank 1 then connects and is heard.
  for (int i = 0; i < 2; ++i) {
    auto a = address_of(c[1 - i]);
    rdmx_add_peer(c[i], 1 - i, a.data(), a.size());
  }
  uint64_t v = 77, w = 0;
  rdmx_request_t *s = nullptr, *r = nullptr;
  ASSERT_EQ(rdmx_irecv(c[0], 1, 0, 4, &w, sizeof w, nullptr, nullptr, &r), RDMX_OK);
  ASSERT_EQ(rdmx_isend(c[1], 0, 0, 4, &v, sizeof v, 0, nullptr, nullptr, &s), RDMX_OK);
  int done = 0;
  rdmx_status_info_t st{};
  for (int i = 0; i < 200000 && !done; ++i) {
    rdmx_progress(c[0]);
    rdmx_progress(c[1]);
    rdmx_test(r, &done, &st);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(st.error, RDMX_OK) << rdmx_last_error(c[0]);
  EXPECT_EQ(w, v);
  rdmx_request_free(c[0], r);
  rdmx_wait(c[1], s, 1000, nullptr);
  rdmx_request_free(c[1], s);
  for (auto* x : c) rdmx_finalize(x);
}

}  // namespace
}  // namespace rdmx::test
