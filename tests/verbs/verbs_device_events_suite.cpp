// The device's asynchronous events: the link under the RDMA device goes down in the
// middle of a rendezvous, and both ranks' requests fail at once with a message that
// names the device, the port and the event, instead of waiting for the transport's
// retries to run out. It takes the netdev down, so it runs only in the Soft-RoCE VM, as
// the last step of the tier (tests/vm/tier.d/60-device-events), and brings it back up.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "engine/engine_test.h"
#include "verbs/verbs_test.h"

namespace rdmx::test {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kJob = 0xde7;

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

class VerbsDeviceEvents : public VerbsCm {
 protected:
  void SetUp() override {
    VerbsCm::SetUp();
    if (IsSkipped()) return;
    const char* d = std::getenv("RDMX_VM_DEV0");
    if (!d) GTEST_SKIP() << "SKIPPED: takes the device's netdev down; only in the Soft-RoCE VM";
    dev_ = d;
    netdev_ = read_line("/sys/class/infiniband/" + dev_ + "/parent");
    if (netdev_.empty()) GTEST_SKIP() << "SKIPPED: " << dev_ << " names no parent netdev";
  }
  void TearDown() override {
    if (netdev_.empty()) return;
    link("up");
    // Back to where the other tests found it: the port active again.
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (read_line(port_state()).find("ACTIVE") == std::string::npos && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_NE(read_line(port_state()).find("ACTIVE"), std::string::npos)
        << dev_ << " did not come back: " << read_line(port_state());
  }
  void link(const char* state) {
    std::string cmd = "ip link set dev " + netdev_ + " " + state;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string port_state() const { return "/sys/class/infiniband/" + dev_ + "/ports/1/state"; }

  std::string dev_, netdev_;
};

TEST_F(VerbsDeviceEvents, PortDownFailsEveryRequestWithTheCause) {
  int up[2], down[2][2], ready[2];
  ASSERT_EQ(::pipe(up), 0);
  ASSERT_EQ(::pipe(down[0]), 0);
  ASSERT_EQ(::pipe(down[1]), 0);
  ASSERT_EQ(::pipe(ready), 0);
  constexpr size_t kLen = 256 << 20;  // far more than moves before the link goes
  const std::string dev = dev_;
  auto child = [&](int rank) {
    rdmx_context_t* ctx = verbs_context(rank, 2, kJob, {{"RDMX_RNDV_CHUNK", "65536"}});
    std::vector<uint8_t> a = ctx ? address_of(ctx) : std::vector<uint8_t>();
    uint32_t len = uint32_t(a.size());
    std::vector<uint8_t> msg(8 + len);
    std::memcpy(msg.data(), &rank, 4);
    std::memcpy(msg.data() + 4, &len, 4);
    std::memcpy(msg.data() + 8, a.data(), len);
    if (::write(up[1], msg.data(), msg.size()) != ssize_t(msg.size())) _exit(3);
    std::vector<uint8_t> other(len);
    if (::read(down[rank][0], other.data(), len) != ssize_t(len) || !ctx) _exit(3);
    rdmx_add_peer(ctx, 1 - rank, other.data(), other.size());
    std::vector<uint8_t> buf(kLen, uint8_t(rank));
    rdmx_request_t* req = nullptr;
    if (rank == 0)
      rdmx_isend(ctx, 1, 0, 5, buf.data(), buf.size(), 0, nullptr, nullptr, &req);
    else
      rdmx_irecv(ctx, 0, 0, 5, buf.data(), buf.size(), nullptr, nullptr, &req);
    rdmx_status_info_t st{};
    int done = 0;
    bool told = false;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!done && Clock::now() < deadline) {
      rdmx_progress(ctx);
      rdmx_test(req, &done, &st);
      rdmx_stats_t s;
      rdmx_get_stats(ctx, &s);
      if (rank == 1 && !told && s.rdma_reads > 0) {
        told = true;
        if (::write(ready[1], "R", 1) != 1) _exit(3);
      }
    }
    std::string why = rdmx_last_error(ctx);
    std::printf("rank %d: %s\n", rank, why.c_str());
    EXPECT_TRUE(done) << "rank " << rank << ": the request did not end";
    EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST) << why;
    EXPECT_NE(why.find("IBV_EVENT_PORT_ERR"), std::string::npos) << why;
    EXPECT_NE(why.find("device " + dev + " port 1"), std::string::npos) << why;
    rdmx_request_free(ctx, req);
    rdmx_finalize(ctx);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  };
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = ::fork();
    ASSERT_GE(pids[r], 0);
    if (pids[r] == 0) child(r);
  }
  std::vector<uint8_t> addrs[2];
  for (int i = 0; i < 2; ++i) {
    int32_t rank = -1;
    uint32_t len = 0;
    ASSERT_EQ(::read(up[0], &rank, 4), 4);
    ASSERT_EQ(::read(up[0], &len, 4), 4);
    ASSERT_TRUE(rank == 0 || rank == 1);
    addrs[rank].resize(len);
    ASSERT_EQ(::read(up[0], addrs[rank].data(), len), ssize_t(len));
  }
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(::write(down[r][1], addrs[1 - r].data(), addrs[1 - r].size()),
              ssize_t(addrs[1 - r].size()));
  pollfd p{ready[0], POLLIN, 0};
  bool reading = ::poll(&p, 1, 60000) == 1;
  auto t0 = Clock::now();
  link("down");
  int st[2] = {0, 0};
  auto deadline = t0 + std::chrono::seconds(90);
  for (int r = 0; r < 2; ++r) {
    while (::waitpid(pids[r], &st[r], WNOHANG) != pids[r]) {
      if (Clock::now() > deadline) {
        ::kill(pids[r], SIGKILL);
        ::waitpid(pids[r], &st[r], 0);
        ADD_FAILURE() << "rank " << r << " hung after the link went down";
        break;
      }
      ::usleep(10000);
    }
  }
  auto took = Clock::now() - t0;
  std::printf("both ranks ended %.0f ms after the link went down\n",
              std::chrono::duration<double, std::milli>(took).count());
  EXPECT_TRUE(reading) << "the receiver never started reading";
  EXPECT_LT(took, std::chrono::seconds(15)) << "the failure took as long as the retries";
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0) << "rank " << r << " status " << st[r];
  for (int fd : {up[0], up[1], down[0][0], down[0][1], down[1][0], down[1][1], ready[0], ready[1]})
    ::close(fd);
}

}  // namespace
}  // namespace rdmx::test
