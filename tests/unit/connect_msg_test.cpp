// The connection private data: fits every backend's limit, survives zero padding, and
// every malformed variant is named.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/connect_msg.h"

namespace rdmx::protocol {
namespace {

const SipKey kKey = job_key_mac_key(77);

CmMessage valid() {
  CmMessage m = make_cm(CmKind::Connect, 1, 2);
  m.credits = 64;
  m.ctrl_credits = 4;
  fresh_nonce(m);
  seal(m, kKey, nullptr);
  return m;
}

TEST(ConnectMsg, FitsTheTightestConnectLimit) {
  EXPECT_LE(sizeof(CmMessage), 47u);  // libfabric verbs' 55, less the ofi backend's 8
}

TEST(ConnectMsg, ZeroPaddingIsAccepted) {
  uint8_t padded[56] = {};
  CmMessage m = valid();
  std::memcpy(padded, &m, sizeof m);
  CmMessage out;
  std::string why;
  EXPECT_EQ(parse_cm(padded, sizeof padded, CmKind::Connect, out, why), RejectReason::None) << why;
  EXPECT_TRUE(verify(out, kKey, nullptr));
  EXPECT_EQ(out.src_rank, 1);
  EXPECT_EQ(out.dst_rank, 2);
}

TEST(ConnectMsg, MalformedVariantsAreRejectedWithAReason) {
  CmMessage out;
  std::string why;
  EXPECT_EQ(parse_cm(nullptr, 0, CmKind::Connect, out, why), RejectReason::Foreign);
  const char junk[40] = "not rdmx at all, just some bytes";
  EXPECT_EQ(parse_cm(junk, sizeof junk, CmKind::Connect, out, why), RejectReason::Foreign);
  CmMessage m = valid();
  EXPECT_EQ(parse_cm(&m, sizeof m - 1, CmKind::Connect, out, why), RejectReason::Corrupt);
  EXPECT_NE(why.find("expected " + std::to_string(sizeof(CmMessage))), std::string::npos) << why;
  m = valid();
  m.version = 1;  // before membership proofs
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Connect, out, why), RejectReason::Version);
  m = valid();
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Accept, out, why), RejectReason::Corrupt);
  m = valid();
  m.credits = 1;
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Connect, out, why), RejectReason::Corrupt);
}

TEST(ConnectMsg, EveryReasonHasWords) {
  for (int r = 0; r <= 11; ++r)
    EXPECT_STRNE(reject_reason_text(RejectReason(r)), "unknown reject reason");
}

// A sealed message verifies with its key and no other; any changed byte, a replayed
// accept bound to another request, or a key of another job fails.
TEST(ConnectMsg, TheMacProvesMembershipAndCatchesEveryChange) {
  CmMessage m = valid();
  EXPECT_TRUE(verify(m, kKey, nullptr));
  EXPECT_FALSE(verify(m, job_key_mac_key(78), nullptr));
  uint8_t secret[16] = {1, 2, 3};
  EXPECT_FALSE(verify(m, secret_mac_key(secret, sizeof secret), nullptr));
  for (size_t i = 0; i < sizeof m; ++i) {
    CmMessage bad = m;
    reinterpret_cast<uint8_t*>(&bad)[i] ^= 0x10;
    EXPECT_FALSE(verify(bad, kKey, nullptr)) << "a change at byte " << i << " went unnoticed";
  }
  CmMessage a = make_cm(CmKind::Accept, 2, 1);
  a.credits = 64;
  a.ctrl_credits = 4;
  fresh_nonce(a);
  seal(a, kKey, m.nonce);
  EXPECT_TRUE(verify(a, kKey, m.nonce));
  CmMessage other = valid();
  EXPECT_FALSE(verify(a, kKey, other.nonce)) << "an accept answers one request only";
  EXPECT_NE(std::memcmp(m.nonce, other.nonce, sizeof m.nonce), 0) << "nonces repeat";
}

}  // namespace
}  // namespace rdmx::protocol
