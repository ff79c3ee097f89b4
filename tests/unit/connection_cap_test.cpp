// The default cap on live connections (RDMX_MAX_CONNECTIONS=-1) follows the process's
// descriptor limit: it caps only where the limit would otherwise be hit.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>

#include "engine/engine_close.h"

namespace rdmx {
namespace {

// Lowers this process's soft descriptor limit for the test's length.
class SoftLimit {
 public:
  explicit SoftLimit(rlim_t soft) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit rl = saved_;
    rl.rlim_cur = std::min(soft, saved_.rlim_max);
    ok_ = setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur == soft;
  }
  ~SoftLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

TEST(ConnectionCap, TheDefaultIsHalfTheDescriptorsBeyond256) {
  {
    SoftLimit l(1024);  // Debian's default for a login shell
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(engine::default_max_connections(), 384u);
  }
  {
    SoftLimit l(20000);
    if (l.ok()) {
      EXPECT_EQ(engine::default_max_connections(), 9872u);
    }
  }
}

TEST(ConnectionCap, TheDefaultIsNeverBelow256) {
  SoftLimit l(300);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(engine::default_max_connections(), 256u);
}

}  // namespace
}  // namespace rdmx
