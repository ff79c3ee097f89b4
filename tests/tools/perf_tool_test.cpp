// rdmx_perf, run briefly on each fabric this machine has: every test and size gets a
// row, and the numbers in it are consistent with each other (min <= p50 <= p99 <= max,
// bandwidth = messages x size / time). Nothing here is timed: performance targets live
// in bench/.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/run_program.h"
#include "harness/world.h"

namespace rdmx::test {
namespace {

using Fields = std::map<std::string, std::string>;

// The CSV rows of rdmx_perf's output, each as column name -> value; fails the test if
// the heading is missing.
std::vector<Fields> csv_rows(const std::string& out) {
  std::istringstream in(out);
  std::string line;
  std::vector<std::string> names;
  std::vector<Fields> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"')
        quoted = !quoted;
      else if (ch == ',' && !quoted)
        cells.push_back(cell), cell.clear();
      else
        cell += ch;
    }
    cells.push_back(cell);
    if (cells[0] == "test") {
      names = cells;
      continue;
    }
    if (names.empty() || cells.size() != names.size()) continue;  // rdmx log lines, if any
    Fields f;
    for (size_t i = 0; i < names.size(); ++i) f[names[i]] = cells[i];
    rows.push_back(f);
  }
  EXPECT_FALSE(names.empty()) << "no CSV heading in:\n" << out;
  return rows;
}

double num(const Fields& f, const char* name) { return std::stod(f.at(name)); }

// Every test at every size from 1 to max_size, with sane numbers.
void expect_sane(const std::string& out, const std::string& fabric, uint64_t max_size) {
  auto rows = csv_rows(out);
  std::map<std::string, std::vector<uint64_t>> sizes;
  for (const auto& f : rows) {
    SCOPED_TRACE(f.at("test") + " at " + f.at("bytes") + " bytes");
    EXPECT_NE(f.at("fabric").find(fabric), std::string::npos) << f.at("fabric");
    sizes[f.at("test")].push_back(std::stoull(f.at("bytes")));
    double min = num(f, "min_us"), p50 = num(f, "p50_us"), p99 = num(f, "p99_us"),
           max = num(f, "max_us"), mean = num(f, "mean_us");
    EXPECT_GT(min, 0);
    EXPECT_LE(min, p50);
    EXPECT_LE(p50, p99);
    EXPECT_LE(p99, max);
    EXPECT_LE(min, mean * 1.0001);
    EXPECT_LE(mean, max * 1.0001);
    EXPECT_GE(num(f, "iters"), 10);
    if (f.at("test") == "lat") continue;
    double msgs = num(f, "Mmsg_s"), mbs = num(f, "MB_s");
    EXPECT_GT(msgs, 0);
    EXPECT_NEAR(mbs, msgs * num(f, "bytes"), 0.01 * mbs + 0.02);
    // A window of messages cannot take less than its fastest window.
    double per_window = num(f, "window") * (f.at("test") == "bibw" ? 2 : 1);
    EXPECT_LE(msgs, per_window / min * 1.001);
  }
  std::vector<uint64_t> want;
  for (uint64_t s = 1; s <= max_size; s *= 2) want.push_back(s);
  for (const char* t : {"lat", "bw", "bibw", "mr"}) EXPECT_EQ(sizes[t], want) << t << "\n" << out;
}

TEST(PerfTool, LoopbackInOneProcess) {
  Child r = run_program({tool("rdmx_perf"), "--fabric", "loopback", "--iters", "40", "--max-size",
                         "65536", "--window", "8", "--csv"},
                        {}, 120);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_sane(r.output, "loopback", 65536);
}

TEST(PerfTool, SharedMemoryInOneProcess) {
  std::string why = backend_unavailable("shm");
  if (!why.empty()) GTEST_SKIP() << "SKIPPED: shm: " << why;
  Child r = run_program(
      {tool("rdmx_perf"), "--fabric", "shm", "--iters", "40", "--max-size", "262144", "--csv"}, {},
      120);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_sane(r.output, "shm", 262144);
}

TEST(PerfTool, LibfabricOneRankPerProcessUnderLaunch) {
  std::string why = backend_unavailable("ofi-tcp");
  if (!why.empty()) GTEST_SKIP() << "SKIPPED: ofi-tcp: " << why;
  Child r = run_program(
      {tool("rdmx_launch"), "-n", "2", "--timeout-ms", "20000", "--", tool("rdmx_perf"), "--fabric",
       "ofi", "--iters", "20", "--max-size", "131072", "--window", "16", "--csv"},
      {"RDMX_SHM=off"}, 180);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_sane(r.output, "ofi", 131072);
}

TEST(PerfTool, TableHasPercentileColumnsForEachTest) {
  Child r = run_program({tool("rdmx_perf"), "--fabric", "loopback", "--iters", "20", "--max-size",
                         "4", "--test", "lat,mr"},
                        {}, 60);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# lat (latency: half a round trip per iteration)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("warm-up excluded"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("p50        p99"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Mmsg/s"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("# bw "), std::string::npos) << "only the tests asked for";
}

TEST(PerfTool, BadOptionsAreNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--iters", "0"}, "--iters '0': expected a whole number from 1"},
      {{"--window", "x"}, "--window 'x'"},
      {{"--test", "lat,foo"}, "unknown test 'foo'"},
      {{"--min-size", "64", "--max-size", "8"}, "--min-size 64 is above --max-size 8"},
      {{"--bogus", "1"}, "unknown option '--bogus'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{tool("rdmx_perf")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Child r = run_program(args, {}, 30);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace rdmx::test
