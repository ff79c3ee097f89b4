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
  EXPECT_TRUE(s.set("RDMX_EAGER_LIMIT", "4096", err));
  EXPECT_EQ(s.eager_limit, 4096);
}

// A cap of one connection would close one for nearly every message of a rank that talks
// to two peers in turn; none at all could not send.
TEST(Settings, AConnectionCapBelowTwoIsRefused) {
  Settings s;
  std::string err;
  for (const char* v : {"0", "1", "-2"}) {
    EXPECT_FALSE(s.set("RDMX_MAX_CONNECTIONS", v, err)) << v;
    EXPECT_EQ(err, std::string("RDMX_MAX_CONNECTIONS='") + v +
                       "' is not accepted: expected -1 or an integer from 2 to 1048576");
  }
  EXPECT_EQ(s.max_connections, -1);
  EXPECT_TRUE(s.set("RDMX_MAX_CONNECTIONS", "2", err));
  EXPECT_EQ(s.max_connections, 2);
}

TEST(Settings, NumbersArePlainDecimalDigits) {
  Settings s;
  std::string err;
  for (const char* v :
       {"0x10", " 5", "5 ", "+5", "5k", "", "1e3", "0b1", "--1", "18446744073709551617"}) {
    EXPECT_FALSE(s.set("RDMX_EAGER_LIMIT", v, err)) << "'" << v << "'";
    EXPECT_EQ(err, std::string("RDMX_EAGER_LIMIT='") + v +
                       "' is not accepted: expected an integer from -1 to 1048576");
  }
  EXPECT_EQ(s.eager_limit, -1) << "a refused value changed the setting";
  EXPECT_FALSE(s.set("RDMX_RNR_RETRY", "- 1", err));
  EXPECT_TRUE(s.set("RDMX_EAGER_LIMIT", "010", err));  // leading zeros are still decimal
  EXPECT_EQ(s.eager_limit, 10);
}

TEST(Settings, StartAtTheDeclaredDefaults) {
  Settings s;
  EXPECT_EQ(s.fabric, "auto");
  EXPECT_EQ(s.eager_limit, -1);  // the fabric chooses
  EXPECT_EQ(s.midsize_limit, -1);
  EXPECT_EQ(s.rndv_chunk, -1);
  EXPECT_EQ(s.rnr_retry, -1);
  EXPECT_EQ(s.rank, -1);  // unset
  EXPECT_EQ(s.bootstrap, "");
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
  setenv("RDMX_MAX_RD_ATOMIC", "0x10", 1);
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("RDMX_MAX_RD_ATOMIC='0x10'"),
            std::string::npos);
  unsetenv("RDMX_MAX_RD_ATOMIC");
}

TEST(Settings, ReadChunkIsTheFabricsChoiceOrAtLeastAPage) {
  Settings s;
  std::string err;
  EXPECT_TRUE(s.set("RDMX_RNDV_CHUNK", "65536", err)) << err;
  EXPECT_EQ(s.rndv_chunk, 65536);
  EXPECT_TRUE(s.set("RDMX_RNDV_CHUNK", "-1", err)) << err;
  EXPECT_EQ(s.rndv_chunk, -1);
  for (const char* bad : {"0", "4095", "-2"}) {
    EXPECT_FALSE(s.set("RDMX_RNDV_CHUNK", bad, err)) << bad;
    EXPECT_EQ(err, std::string("RDMX_RNDV_CHUNK='") + bad +
                       "' is not accepted: expected -1 or an integer from 4096 to 1073741824");
  }
  EXPECT_EQ(s.rndv_chunk, -1);
}

TEST(Settings, InvalidRankOrSizeIsNamed) {
  rdmx_init_params_t p{3, 2, "loopback", 0, nullptr};
  rdmx_context_t* c = nullptr;
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("rank 3 of size 2"), std::string::npos);
}

TEST(Settings, MisspeltNamesAreNamedWithTheClosestSetting) {
  const char* env[] = {"RDMX_EAGERLIMIT=5", "RDMX_CREDIT=8",    "RDMX_EAGER=1", "RDMX_SRQ=1",
                       "RDMX_VM_DEV0=rxe0", "RDMX_BUILDDIR=/b", "PATH=/bin",    nullptr};
  auto w = misspelt_settings(env);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0],
            "RDMX_EAGERLIMIT is set but is not an rdmx setting; did you mean RDMX_EAGER_LIMIT?");
  EXPECT_NE(w[1].find("did you mean RDMX_CREDITS?"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("did you mean RDMX_EAGER_LIMIT?"), std::string::npos) << w[2];
  const char* env2[] = {"RDMX_BOOTSTRAP_TIMEOUT=5", nullptr};
  EXPECT_NE(misspelt_settings(env2).at(0).find("did you mean RDMX_BOOTSTRAP_TIMEOUT_MS?"),
            std::string::npos);
  Settings s;
  std::string err;
  EXPECT_FALSE(s.set("RDMX_RNDV_CHUNKS", "4096", err));
  EXPECT_EQ(err, "unknown setting 'RDMX_RNDV_CHUNKS' (did you mean RDMX_RNDV_CHUNK?)");
}

}  // namespace
}  // namespace rdmx
