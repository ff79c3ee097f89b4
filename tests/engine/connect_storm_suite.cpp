// A connect storm: 64 processes connect to one rank at once, as every rank of a job
// does when it first sends to rank 0, or in an alltoall's first round. Every connection
// must be made, every message arrive, no request fail; the time is reported.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/engine_test.h"
#include "harness/child_rank.h"

namespace rdmx::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kStormPeers = 64;
constexpr uint64_t kStormKey = 77;
// Every rank may take this long to connect, and rank 0 this long to hear from all: 65
// processes starting their verbs contexts at once on rxe in the VM (emulated, 2
// processors) have taken 12-20 s to connect, and past 30 s on a loaded machine.
constexpr int kStormConnectMs = 150000;
constexpr int kStormDeadlineS = 180;
const SettingList kStormSettings{{"RDMX_CONNECT_TIMEOUT_MS", std::to_string(kStormConnectMs)}};

uint64_t storm_value(int rank) { return uint64_t(rank) * 1000003u; }

// One of the storm's processes: rank `rank` sends its value to rank 0 as soon as it
// has rank 0's address, then progresses until rank 0 says it has everything.
[[noreturn]] void storm_rank(const std::string& backend, int rank, int to_parent, int from_parent) {
  rdmx_context_t* c = open_rank(backend, rank, kStormPeers + 1, kStormKey, kStormSettings);
  if (!c) _exit(2);
  std::vector<uint8_t> zero;
  if (!send_address(to_parent, c) || !read_address(from_parent, zero)) _exit(3);
  if (rdmx_add_peer(c, 0, zero.data(), zero.size()) != RDMX_OK) _exit(4);
  uint64_t v = storm_value(rank);
  rdmx_request_t* r = nullptr;
  if (rdmx_isend(c, 0, 0, 9, &v, sizeof v, 0, nullptr, nullptr, &r) != RDMX_OK) _exit(5);
  rdmx_status_info_t st{};
  if (rdmx_wait(c, r, kStormConnectMs + 10000, &st) != RDMX_OK || st.error != RDMX_OK) {
    std::fprintf(stderr, "storm rank %d: %s\n", rank, rdmx_last_error(c));
    _exit(6);
  }
  rdmx_request_free(c, r);
  // Stay until rank 0 has every message: a rank that left could not answer a credit
  // return or a late handshake step.
  auto until = Clock::now() + std::chrono::seconds(kStormDeadlineS + 60);
  for (char ch = 0; Clock::now() < until;) {
    rdmx_progress(c);
    pollfd p{from_parent, POLLIN, 0};
    if (::poll(&p, 1, 0) == 1 && ::read(from_parent, &ch, 1) == 1) break;
  }
  rdmx_finalize(c);
  _exit(0);
}

// A storm rank runs in a fresh image of this program, not in a bare fork: librdmacm
// opens its device contexts once per process, and a forked child's verbs calls on the
// parent's (any earlier test's) are refused (EACCES: the files were opened under the
// parent's credentials). The image finds its part in RDMX_TEST_STORM_RANK when
// GoogleTest sets up its environments (it does so only with a test selected).
constexpr const char* kStormEnv = "RDMX_TEST_STORM_RANK";

class StormRankImage : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* v = std::getenv(kStormEnv);
    if (!v) return;
    char backend[64] = {};
    int rank = 0, up = -1, down = -1;
    if (std::sscanf(v, "%63[^:]:%d:%d:%d", backend, &rank, &up, &down) != 4) _exit(7);
    storm_rank(backend, rank, up, down);
  }
};
const auto* const kStormRankImage = ::testing::AddGlobalTestEnvironment(new StormRankImage);

ChildRank start_storm_rank(const std::string& backend, int rank) {
  return fork_rank([&backend, rank](int up, int down) {
    std::string part = backend + ":" + std::to_string(rank) + ":" + std::to_string(up) + ":" +
                       std::to_string(down);
    ::setenv(kStormEnv, part.c_str(), 1);
    char self[] = "rdmx_tests", filter[] = "--gtest_filter=*StormTest*";
    char* argv[] = {self, filter, nullptr};
    ::execv("/proc/self/exe", argv);
    _exit(8);
  });
}

TEST_P(StormTest, SixtyFourProcessesConnectingToOneRankAtOnceAllConnect) {
  const std::string backend = GetParam();
  std::vector<ChildRank> kids;
  struct Reaper {
    std::vector<ChildRank>& kids;
    ~Reaper() {
      for (auto& k : kids) {
        if (k.pid <= 0) continue;
        ::kill(k.pid, SIGKILL);
        ::waitpid(k.pid, nullptr, 0);
      }
    }
  } reaper{kids};
  rdmx_context_t* c = open_rank(backend, 0, kStormPeers + 1, kStormKey, kStormSettings);
  ASSERT_TRUE(c);
  for (int i = 1; i <= kStormPeers; ++i) {
    kids.push_back(start_storm_rank(backend, i));
    ASSERT_GE(kids.back().pid, 0) << "fork of rank " << i;
  }
  for (int i = 1; i <= kStormPeers; ++i) {
    std::vector<uint8_t> a;
    ASSERT_TRUE(read_address(kids[size_t(i - 1)].from_child, a)) << "rank " << i;
    ASSERT_EQ(rdmx_add_peer(c, i, a.data(), a.size()), RDMX_OK) << rdmx_last_error(c);
  }
  std::vector<uint64_t> in(kStormPeers + 1, 0);
  std::vector<rdmx_request_t*> recvs(kStormPeers + 1, nullptr);
  for (int i = 1; i <= kStormPeers; ++i)
    ASSERT_EQ(rdmx_irecv(c, i, 0, 9, &in[size_t(i)], 8, nullptr, nullptr, &recvs[size_t(i)]),
              RDMX_OK);
  // Every rank is ready; each sends the moment it has rank 0's address.
  auto start = Clock::now();
  for (auto& k : kids) ASSERT_TRUE(send_address(k.to_child, c));
  int left = kStormPeers;
  std::vector<bool> done(kStormPeers + 1, false);
  auto deadline = start + std::chrono::seconds(kStormDeadlineS);
  while (left > 0 && Clock::now() < deadline) {
    rdmx_progress(c);
    for (int i = 1; i <= kStormPeers; ++i) {
      if (done[size_t(i)]) continue;
      int flag = 0;
      rdmx_status_info_t st{};
      rdmx_test(recvs[size_t(i)], &flag, &st);
      if (!flag) continue;
      done[size_t(i)] = true;
      --left;
      EXPECT_EQ(st.error, RDMX_OK) << "from rank " << i << ": " << rdmx_last_error(c);
      EXPECT_EQ(in[size_t(i)], storm_value(i)) << "from rank " << i;
    }
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(left, 0) << left << " of " << kStormPeers << " messages missing after "
                     << kStormDeadlineS << " s";
  rdmx_stats_t s{};
  rdmx_get_stats(c, &s);
  std::printf(
      "[ storm    ] %s: %d processes connected to rank 0 at once, all messages in %.2f s "
      "(%llu connections)\n",
      backend.c_str(), kStormPeers - left, secs, (unsigned long long)s.connections);
  for (auto& k : kids) {
    (void)!::write(k.to_child, "X", 1);
    int status = 0;
    ::waitpid(k.pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a storm rank ended with status " << status;
    k.pid = -1;
  }
  for (int i = 1; i <= kStormPeers; ++i) rdmx_request_free(c, recvs[size_t(i)]);
  rdmx_finalize(c);
}

}  // namespace
}  // namespace rdmx::test
