// The connection private data: fits every backend's limit, survives zero padding, and
// every malformed variant is named.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/connect_msg.h"

namespace rdmx::protocol {
namespace {

CmMessage valid() {
  CmMessage m = make_cm(CmKind::Connect, 77, 1, 2);
  m.credits = 64;
  m.ctrl_credits = 4;
  return m;
}

TEST(ConnectMsg, FitsTheTightestConnectLimit) {
  EXPECT_LE(sizeof(CmMessage), 55u);  // libfabric verbs; rdma_cm allows 56
}

TEST(ConnectMsg, ZeroPaddingIsAccepted) {
  uint8_t padded[56] = {};
  CmMessage m = valid();
  std::memcpy(padded, &m, sizeof m);
  CmMessage out;
  std::string why;
  EXPECT_EQ(parse_cm(padded, sizeof padded, CmKind::Connect, out, why), RejectReason::None) << why;
  EXPECT_EQ(out.job_key, 77u);
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
  EXPECT_NE(why.find("expected 40"), std::string::npos) << why;
  m = valid();
  m.version = 2;
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Connect, out, why), RejectReason::Version);
  m = valid();
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Accept, out, why), RejectReason::Corrupt);
  m = valid();
  m.reserved[1] = 1;
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Connect, out, why), RejectReason::Corrupt);
  m = valid();
  m.credits = 1;
  EXPECT_EQ(parse_cm(&m, sizeof m, CmKind::Connect, out, why), RejectReason::Corrupt);
}

TEST(ConnectMsg, EveryReasonHasWords) {
  for (int r = 0; r <= 9; ++r)
    EXPECT_STRNE(reject_reason_text(RejectReason(r)), "unknown reject reason");
}

}  // namespace
}  // namespace rdmx::protocol
