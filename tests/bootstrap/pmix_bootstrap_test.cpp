// rdmx_init_bootstrap's choice between PMIx and its own sockets, and what it says when
// the choice cannot work. Jobs really started through PMIx run in the MPI tier
// (tests/mpi/run-mpi-tests: mpirun -np 4 tests/launch/bootstrap_job) and the Slurm tier.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bootstrap/pmix_bootstrap.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

// The environment of a process no launcher started, with RDMX_BOOTSTRAP_METHOD=method.
class NoLauncher : public ::testing::Test {
 protected:
  void with_method(const char* method) {
    for (const char* v : {"PMIX_NAMESPACE", "PMIX_RANK", "RDMX_RANK"}) ::unsetenv(v);
    ::setenv("RDMX_BOOTSTRAP_METHOD", method, 1);
  }
  void TearDown() override { ::unsetenv("RDMX_BOOTSTRAP_METHOD"); }
  std::string fails_with() {
    rdmx_context_t* c = nullptr;
    int rc = rdmx_init_bootstrap(&c);
    EXPECT_NE(rc, RDMX_OK);
    EXPECT_EQ(c, nullptr);
    if (c) rdmx_finalize(c);
    return rdmx_last_error(nullptr);
  }
};

TEST_F(NoLauncher, AskedForPmixItSaysNoLauncherStartedIt) {
  with_method("pmix");
  EXPECT_FALSE(pmix_launched());
  std::string why = fails_with();
  if (pmix_built())
    EXPECT_NE(why.find("started by a PMIx launcher"), std::string::npos) << why;
  else
    EXPECT_NE(why.find("built without PMIx"), std::string::npos) << why;
}

TEST_F(NoLauncher, AutoTakesTheSocketBootstrap) {
  with_method("auto");
  std::string why = fails_with();
  EXPECT_NE(why.find("RDMX_RANK is not set"), std::string::npos) << why;
}

TEST_F(NoLauncher, AnUnknownMethodIsRefusedNamingTheChoices) {
  with_method("slurm");
  std::string why = fails_with();
  EXPECT_NE(why.find("RDMX_BOOTSTRAP_METHOD"), std::string::npos) << why;
  EXPECT_NE(why.find("pmix"), std::string::npos) << why;
  EXPECT_NE(why.find("socket"), std::string::npos) << why;
}

TEST(ContextIdentity, RankAndSizeAreTheOnesGivenAtInit) {
  rdmx_init_params_t p{2, 5, "loopback", 9, nullptr};
  rdmx_context_t* c = nullptr;
  ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK) << rdmx_last_error(nullptr);
  EXPECT_EQ(rdmx_context_rank(c), 2);
  EXPECT_EQ(rdmx_context_size(c), 5);
  rdmx_finalize(c);
  EXPECT_EQ(rdmx_context_rank(nullptr), -1);
  EXPECT_EQ(rdmx_context_size(nullptr), 0);
}

}  // namespace
}  // namespace rdmx::bootstrap
