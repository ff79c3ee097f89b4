// The standalone bootstrap: ranks agree on a job key and everyone's address, every
// wait ends at RDMX_BOOTSTRAP_TIMEOUT_MS with the missing ranks named, bad variables
// are named; and end to end, rdmx_launch starts rdmx_pingpong one rank per process.
#include <gtest/gtest.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_test_util.h"
#include "core/settings.h"
#include "harness/run_program.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

using rdmx::test::Child;
using rdmx::test::run_program;
using rdmx::test::tool;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(Bootstrap, RanksAgreeOnAKeyAndEveryAddress) {
  constexpr int kSize = 4;
  uint16_t port = free_port();
  std::vector<Outcome> out(kSize);
  std::vector<std::thread> t;
  for (int r = kSize - 1; r >= 0; --r)  // rank 0 last: the others wait for it
    t.emplace_back([&, r] { out[size_t(r)] = run_rank(config(r, kSize, port, 10000)); });
  for (auto& x : t) x.join();
  for (int r = 0; r < kSize; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(out[size_t(r)].rc, RDMX_OK) << out[size_t(r)].err;
    EXPECT_NE(out[size_t(r)].key, 0u);
    EXPECT_EQ(out[size_t(r)].key, out[0].key);
    ASSERT_EQ(out[size_t(r)].table.size(), size_t(kSize));
    for (int q = 0; q < kSize; ++q)
      EXPECT_EQ(out[size_t(r)].table[size_t(q)], std::vector<uint8_t>(size_t(q) + 1, uint8_t(q)));
  }
}

TEST(Bootstrap, AMissingRankTimesOutAndIsNamedOnEveryRank) {
  uint16_t port = free_port();
  Outcome r0, r1, r3;
  auto t0 = std::chrono::steady_clock::now();
  std::thread a([&] { r1 = run_rank(config(1, 4, port, 1500)); });
  std::thread b([&] { r3 = run_rank(config(3, 4, port, 1500)); });
  r0 = run_rank(config(0, 4, port, 1500));
  a.join();
  b.join();
  EXPECT_LT(seconds_since(t0), 6.0) << "every wait is bounded";
  EXPECT_EQ(r0.rc, RDMX_ERR_TIMEOUT);
  EXPECT_NE(r0.err.find("waiting for rank 2 of 4"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("RDMX_BOOTSTRAP_TIMEOUT_MS"), std::string::npos) << r0.err;
  for (Outcome* o : {&r1, &r3}) {
    EXPECT_NE(o->rc, RDMX_OK);
    EXPECT_NE(o->err.find("rank 0 gave up"), std::string::npos) << o->err;
    EXPECT_NE(o->err.find("rank 2"), std::string::npos) << o->err;
  }
}

TEST(Bootstrap, WithoutRankZeroTheOthersTimeOut) {
  uint16_t port = free_port();
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_rank(config(1, 2, port, 800));
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_EQ(o.rc, RDMX_ERR_TIMEOUT);
  EXPECT_NE(o.err.find("found no rank 0 at 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << o.err;
}

// A rank started with the wrong RDMX_SIZE hears why at once; rank 0 keeps waiting for the
// real rank 1 and, when it never comes, says what it turned away.
TEST(Bootstrap, ASizeMismatchIsNamed) {
  uint16_t port = free_port();
  Outcome r0, r1;
  double r1_took = 0;
  std::thread a([&] {
    auto t = std::chrono::steady_clock::now();
    r1 = run_rank(config(1, 3, port, 3000));
    r1_took = seconds_since(t);
  });
  r0 = run_rank(config(0, 2, port, 1500));
  a.join();
  EXPECT_EQ(r0.rc, RDMX_ERR_TIMEOUT);
  EXPECT_NE(r0.err.find("waiting for rank 1 of 2"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("rank 1 has RDMX_SIZE=3 but rank 0 has RDMX_SIZE=2"), std::string::npos)
      << r0.err;
  EXPECT_NE(r1.rc, RDMX_OK);
  EXPECT_NE(r1.err.find("RDMX_SIZE=3"), std::string::npos) << r1.err;
  EXPECT_LT(r1_took, 1.5) << "the misconfigured rank is told at once";
}

// A connection to rank 0 that is not one of its ranks, as a stranger would open.
// Join frames with a wrong size, a rank out of range or taken, and bytes that are no
// frame at all each cost the job nothing: the real ranks still start it.
TEST(Bootstrap, AStrangersBadFramesCostTheJobNothing) {
  uint16_t port = free_port();
  Outcome r0, r1, r2;
  std::thread t0([&] { r0 = run_rank(config(0, 3, port, 8000)); });
  std::vector<int> strangers;
  for (int k = 0; k < 5; ++k) strangers.push_back(raw_connect(port));
  ASSERT_GE(strangers[0], 0);
  send_join(strangers[0], 1, 99);         // wrong size
  send_join(strangers[1], 7, 3);          // no such rank
  send_join(strangers[2], 0, 3);          // rank 0 itself
  send_join(strangers[3], 1, 3, 0x1234);  // not a bootstrap message
  ASSERT_EQ(::send(strangers[4], "GET / HTTP/1.0\r\n\r\n", 18, MSG_NOSIGNAL), 18);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::thread t1([&] { r1 = run_rank(config(1, 3, port, 8000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int late = raw_connect(port);  // claims rank 1, which has joined: turned away
  send_join(late, 1, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  r2 = run_rank(config(2, 3, port, 8000));
  t1.join();
  t0.join();
  for (int fd : strangers) ::close(fd);
  ::close(late);
  for (Outcome* o : {&r0, &r1, &r2}) EXPECT_EQ(o->rc, RDMX_OK) << o->err;
  EXPECT_EQ(r1.key, r0.key);
  EXPECT_EQ(r2.key, r0.key);
}

// Connections that connect and then say nothing (or half a message) do not hold rank 0
// up: the real ranks start the job long before those connections time out.
TEST(Bootstrap, StalledConnectionsDoNotStallRankZero) {
  uint16_t port = free_port();
  Outcome r0, r1;
  std::thread t0([&] { r0 = run_rank(config(0, 2, port, 20000)); });
  std::vector<int> stalled;
  for (int k = 0; k < 30; ++k) stalled.push_back(raw_connect(port));
  ASSERT_EQ(::send(stalled[0], "RXBS", 4, MSG_NOSIGNAL), 4);  // half a header
  auto start = std::chrono::steady_clock::now();
  r1 = run_rank(config(1, 2, port, 20000));
  t0.join();
  double took = seconds_since(start);
  for (int fd : stalled) ::close(fd);
  EXPECT_EQ(r0.rc, RDMX_OK) << r0.err;
  EXPECT_EQ(r1.rc, RDMX_OK) << r1.err;
  EXPECT_LT(took, 3.0) << "30 silent connections held rank 0 up";
}

// With few file descriptors and 200 idle connections from elsewhere, rank 0 makes room
// (dropping strangers) instead of spinning, and the job starts.
TEST(Bootstrap, RunningOutOfDescriptorsCostsTheJobNothing) {
  uint16_t port = free_port();
  pid_t root = ::fork();
  if (root == 0) {
    rlimit lim{96, 96};
    ::setrlimit(RLIMIT_NOFILE, &lim);
    Outcome o = run_rank(config(0, 2, port, 15000));
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    double cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    if (o.rc != RDMX_OK) fprintf(stderr, "rank 0: %s\n", o.err.c_str());
    ::_exit(o.rc != RDMX_OK ? 1 : cpu > 2.0 ? 2 : 0);
  }
  pid_t flood = ::fork();
  if (flood == 0) {
    std::vector<int> fds;
    for (int k = 0; k < 200; ++k) fds.push_back(raw_connect(port));
    ::sleep(4);
    ::_exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Outcome r1 = run_rank(config(1, 2, port, 15000));
  int status = 0;
  ::waitpid(root, &status, 0);
  ::kill(flood, SIGKILL);
  ::waitpid(flood, nullptr, 0);
  EXPECT_EQ(r1.rc, RDMX_OK) << r1.err;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "rank 0 spun while out of descriptors";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Bootstrap, AnImpossibleSizeFailsAtOnce) {
  Settings s;
  std::string err;
  EXPECT_FALSE(s.set("RDMX_SIZE", "2147483647", err));
  EXPECT_NE(err.find("RDMX_SIZE"), std::string::npos) << err;
  EXPECT_NE(err.find("65536"), std::string::npos) << err;
}

TEST(Bootstrap, InvalidOrMissingVariablesAreNamed) {
  Settings s;
  std::string err;
  EXPECT_FALSE(s.set("RDMX_BOOTSTRAP", "nohost", err));
  EXPECT_EQ(err,
            "RDMX_BOOTSTRAP='nohost' is not accepted: expected host:port with a port from 1 "
            "to 65535");
  EXPECT_FALSE(s.set("RDMX_BOOTSTRAP", "node1:0", err));
  EXPECT_FALSE(s.set("RDMX_BOOTSTRAP", "node1:70000", err));
  EXPECT_FALSE(s.set("RDMX_RANK", "-1", err));
  EXPECT_FALSE(s.set("RDMX_SIZE", "0", err));
  EXPECT_TRUE(s.set("RDMX_BOOTSTRAP", "[::1]:4000", err));
  Config c;
  EXPECT_FALSE(config_from(s, c, err));
  EXPECT_NE(err.find("RDMX_RANK is not set"), std::string::npos) << err;
  EXPECT_TRUE(s.set("RDMX_RANK", "2", err));
  EXPECT_TRUE(s.set("RDMX_SIZE", "2", err));
  EXPECT_FALSE(config_from(s, c, err));
  EXPECT_EQ(err, "RDMX_RANK=2 is not below RDMX_SIZE=2");
  EXPECT_TRUE(s.set("RDMX_RANK", "1", err));
  ASSERT_TRUE(config_from(s, c, err)) << err;
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, 4000);
}

TEST(Bootstrap, InitBootstrapWithoutVariablesSaysWhatIsMissing) {
  ::unsetenv("RDMX_RANK");
  rdmx_context_t* c = nullptr;
  EXPECT_EQ(rdmx_init_bootstrap(&c), RDMX_ERR_INVALID);
  EXPECT_EQ(c, nullptr);
  EXPECT_NE(std::string(rdmx_last_error(nullptr)).find("RDMX_RANK is not set"), std::string::npos)
      << rdmx_last_error(nullptr);
}

TEST(Bootstrap, InitBootstrapOfOneRankAddsItself) {
  std::string where = "127.0.0.1:" + std::to_string(free_port());
  ::setenv("RDMX_RANK", "0", 1);
  ::setenv("RDMX_SIZE", "1", 1);
  ::setenv("RDMX_BOOTSTRAP", where.c_str(), 1);
  ::setenv("RDMX_FABRIC", "loopback", 1);
  rdmx_context_t* c = nullptr;
  int rc = rdmx_init_bootstrap(&c);
  for (const char* v : {"RDMX_RANK", "RDMX_SIZE", "RDMX_BOOTSTRAP", "RDMX_FABRIC"}) ::unsetenv(v);
  ASSERT_EQ(rc, RDMX_OK) << rdmx_last_error(nullptr);
  uint32_t v = 5, got = 0;
  rdmx_request_t *s = nullptr, *r = nullptr;
  ASSERT_EQ(rdmx_irecv(c, 0, 0, 1, &got, sizeof got, nullptr, nullptr, &r), RDMX_OK);
  ASSERT_EQ(rdmx_isend(c, 0, 0, 1, &v, sizeof v, 0, nullptr, nullptr, &s), RDMX_OK);
  EXPECT_EQ(rdmx_wait(c, r, 5000, nullptr), RDMX_OK);
  EXPECT_EQ(got, 5u);
  rdmx_request_free(c, s);
  rdmx_request_free(c, r);
  rdmx_finalize(c);
}

// One rank per process needs a fabric that crosses processes: why there is none, or "".
std::string no_multi_process_fabric() {
  std::string no_ofi = rdmx::test::backend_unavailable("ofi-tcp");
  std::string no_verbs = rdmx::test::backend_unavailable("verbs");
  if (no_ofi.empty() || no_verbs.empty()) return "";
  return "no multi-process fabric: ofi: " + no_ofi + "; verbs: " + no_verbs;
}

TEST(Bootstrap, LaunchRunsPingpongOneRankPerProcess) {
  std::string why = no_multi_process_fabric();
  if (!why.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  Child r = run_program({tool("rdmx_launch"), "-n", "2", "--", tool("rdmx_pingpong"), "--max-size",
                         "65536", "--iters", "20"},
                        {}, 120);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("(one rank per process, standalone bootstrap)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("bandwidth (MB/s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("       65536 "), std::string::npos) << r.output;
}

TEST(Bootstrap, LaunchRunsPingpongInPairs) {
  std::string why = no_multi_process_fabric();
  if (!why.empty()) GTEST_SKIP() << "SKIPPED: " << why;
  Child r = run_program({tool("rdmx_launch"), "-n", "4", "--", tool("rdmx_pingpong"), "--max-size",
                         "4096", "--iters", "20"},
                        {}, 120);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("ranks 0 and 1 of 2 pairs running at once"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("        4096 "), std::string::npos) << r.output;
}

TEST(Bootstrap, PingpongRefusesAnOddNumberOfRanks) {
  Child r = run_program({tool("rdmx_launch"), "-n", "3", "--timeout-ms", "20000", "--",
                         tool("rdmx_pingpong"), "--max-size", "8", "--iters", "2"},
                        {}, 60);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rdmx_pingpong: needs an even number of ranks, run in pairs (0 with 1, "
                          "2 with 3, ...); the job has 3"),
            std::string::npos)
      << r.output;
}

TEST(Bootstrap, PingpongRankZeroAloneTimesOutNamingTheMissingRank) {
  std::string where = "RDMX_BOOTSTRAP=127.0.0.1:" + std::to_string(free_port());
  Child r =
      run_program({tool("rdmx_pingpong")},
                  {"RDMX_RANK=0", "RDMX_SIZE=2", where, "RDMX_BOOTSTRAP_TIMEOUT_MS=1000"}, 30);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.output.find("waiting for rank 1 of 2 to connect"), std::string::npos) << r.output;
}

TEST(Bootstrap, LaunchReturnsTheWorstStatusWhenARankNeverComes) {
  // Rank 1 exits at once without joining: rank 0 times out, and the launcher says so.
  std::string script = "if [ \"$RDMX_RANK\" = 1 ]; then exit 0; fi; exec " + tool("rdmx_pingpong");
  Child r = run_program(
      {tool("rdmx_launch"), "-n", "2", "--timeout-ms", "1000", "--", "/bin/sh", "-c", script}, {},
      60);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("waiting for rank 1 of 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rdmx_launch: rank 0 exited with status 1"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace rdmx::bootstrap
