// rdmx_set_log_handler: a host takes rdmx's log lines instead of stderr.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "core/log.h"
#include "rdmx/rdmx.h"

namespace {

struct Line {
  int level;
  int32_t rank;
  std::string text;
};

void collect(int level, int32_t rank, const char* line, void* user) {
  static_cast<std::vector<Line>*>(user)->push_back({level, rank, line});
}

class LogHandler : public ::testing::Test {
 protected:
  void SetUp() override { rdmx_set_log_handler(collect, &lines); }
  void TearDown() override { rdmx_set_log_handler(nullptr, nullptr); }
  std::vector<Line> lines;
};

TEST_F(LogHandler, TakesLinesWithLevelAndRank) {
  rdmx::log_message(rdmx::LogLevel::Warn, 3, "credits %d", 7);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, 1);
  EXPECT_EQ(lines[0].rank, 3);
  EXPECT_EQ(lines[0].text, "credits 7");  // no prefix, no newline
  rdmx_set_log_handler(nullptr, nullptr);
  testing::internal::CaptureStderr();
  rdmx::log_message(rdmx::LogLevel::Error, 1, "back on stderr");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "rdmx[1] error: back on stderr\n");
  EXPECT_EQ(lines.size(), 1u);
}

TEST_F(LogHandler, TakesInitErrors) {
  rdmx_init_params_t p{0, 1, "loopback", 0, nullptr};
  setenv("RDMX_CREDITS", "2", 1);
  rdmx_context_t* c = nullptr;
  testing::internal::CaptureStderr();
  EXPECT_EQ(rdmx_init(&p, &c), RDMX_ERR_INVALID);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  unsetenv("RDMX_CREDITS");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, 0);
  EXPECT_NE(lines[0].text.find("RDMX_CREDITS='2' is not accepted"), std::string::npos);
}

TEST_F(LogHandler, WarnsOnceOfAMisspeltSettingAtInit) {
  setenv("RDMX_RNDV_CHUNKS", "4096", 1);
  rdmx_init_params_t p{0, 1, "loopback", 0, nullptr};
  for (int i = 0; i < 2; ++i) {
    rdmx_context_t* c = nullptr;
    ASSERT_EQ(rdmx_init(&p, &c), RDMX_OK) << rdmx_last_error(nullptr);
    rdmx_finalize(c);
  }
  unsetenv("RDMX_RNDV_CHUNKS");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].level, 1);
  EXPECT_EQ(lines[0].text,
            "RDMX_RNDV_CHUNKS is set but is not an rdmx setting; did you mean RDMX_RNDV_CHUNK?");
}

}  // namespace
