// RDMX_* settings: defaults, validation, and errors that name variable, value and range.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/settings.h"
#include "rdmx/rdmx.h"

namespace rdmx {
namespace {

TEST(Settings, RejectsOutOfRangeValuesWithTheAcceptedRange) {
  Settings s;
  std::string err;
  EXPECT_FALSE(s.set("RDMX_RETRY_COUNT", "8", err));
  EXPECT_EQ(err, "RDMX_RETRY_COUNT='8' is not accepted: expected an integer from 0 to 7");
  EXPECT_FALSE(s.set("RDMX_EAGER_LIMIT", "-5", err));
  EXPECT_NE(err.find("RDMX_EAGER_LIMIT='-5'"), std::string::npos);
  EXPECT_FALSE(s.set("RDMX_CREDITS", "12x", err));
  EXPECT_FALSE(s.set("RDMX_FABRIC", "infiniband", err));
  EXPECT_NE(err.find("one of auto|loopback|verbs|ofi"), std::string::npos);
  EXPECT_FALSE(s.set("RDMX_NO_SUCH", "1", err));
  EXPECT_TRUE(s.set("RDMX_RNR_RETRY", "-1", err));
  EXPECT_TRUE(s.set("RDMX_EAGER_LIMIT", "0x1000", err));
  EXPECT_EQ(s.eager_limit, 4096u);
}

TEST(Settings, RnrRetryFollowsTheReceiveModel) {
  Settings s;
  EXPECT_EQ(s.effective_rnr_retry(), 0);  // credits: RNR cannot happen
  s.srq = 1;
  EXPECT_EQ(s.effective_rnr_retry(), 7);  // a shared queue can run dry: retry
  s.rnr_retry = 3;
  EXPECT_EQ(s.effective_rnr_retry(), 3);
}

TEST(Settings, InitStopsOnAnInvalidEnvironmentValue) {
  setenv("RDMX_MAX_RD_ATOMIC", "300", 1);
  rdmx_init_params_t p{0, 1, "loopback", 0, nullptr};
  rdmx_context_t* c = nullptr;
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_EQ(c, nullptr);
  EXPECT_STREQ(rdmx_last_error(nullptr),
               "RDMX_MAX_RD_ATOMIC='300' is not accepted: expected an integer from 1 to 255");
  unsetenv("RDMX_MAX_RD_ATOMIC");
  p.settings = "RDMX_SRQ=2";
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("RDMX_SRQ='2'"), std::string::npos);
  p.settings = "RDMX_SRQ=0,RDMX_CREDITS=8";
  ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK);
  rdmx_finalize(c);
}

TEST(Settings, InvalidRankOrSizeIsNamed) {
  rdmx_init_params_t p{3, 2, "loopback", 0, nullptr};
  rdmx_context_t* c = nullptr;
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("rank 3 of size 2"), std::string::npos);
}

}  // namespace
}  // namespace rdmx
