// The device's asynchronous events: the link under the RDMA device goes down in the
// middle of a rendezvous, and both ranks' requests fail at once with a message that
// names the device, the port and the event, instead of waiting for the transport's
// retries to run out. It takes the netdev down, so it runs only in the Soft-RoCE VM, as
// the last step of the tier (tests/vm/tier.d/60-device-events), and brings it back up.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  constexpr size_t kLen = 256 << 20;  // far more than moves before the link goes
  const std::string dev = dev_;
  ForkedPair pair;
  pair.start([&](int rank) {
    rdmx_context_t* ctx = verbs_context(rank, 2, kJob, {{"RDMX_RNDV_CHUNK", "65536"}});
    if (!pair.join(ctx, rank)) _exit(3);
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
        pair.tell_ready();
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
  });
  bool reading = pair.wait_ready(60000);
  auto t0 = Clock::now();
  link("down");
  int st[2] = {0, 0};
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(pair.reap(r, t0 + std::chrono::seconds(90), st[r]))
        << "rank " << r << " hung after the link went down";
  auto took = Clock::now() - t0;
  std::printf("both ranks ended %.0f ms after the link went down\n",
              std::chrono::duration<double, std::milli>(took).count());
  EXPECT_TRUE(reading) << "the receiver never started reading";
  EXPECT_LT(took, std::chrono::seconds(15)) << "the failure took as long as the retries";
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0) << "rank " << r << " status " << st[r];
}

}  // namespace
}  // namespace rdmx::test
