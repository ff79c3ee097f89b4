// The device's asynchronous events: the link under the RDMA device goes down in the
// middle of a rendezvous, and every request either rank has going (the transfer,
// receives, rendezvous and synchronous sends still waiting for the peer) fails at once
// with a message that names the device, the port and the event, instead of waiting for
// the transport's retries to run out. It takes the netdev down, so it runs only in the Soft-RoCE
// VM, as the last step of the tier (tests/vm/tier.d/60-device-events), and brings it back up.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

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
  constexpr size_t kRndv = 1 << 20;   // a rendezvous the peer never matches
  const std::string dev = dev_;
  ForkedPair pair;
  pair.start([&](int rank) {
    rdmx_context_t* ctx = verbs_context(rank, 2, kJob, {{"RDMX_RNDV_CHUNK", "65536"}});
    if (!pair.join(ctx, rank)) _exit(3);
    int peer = 1 - rank;
    std::vector<uint8_t> buf(kLen, uint8_t(rank)), rndv(kRndv, uint8_t(rank));
    uint8_t small[3][8] = {}, sync_msg[8] = {};
    // What a rank has going when the link goes: the transfer being read, receives no one
    // will match, rendezvous sends and synchronous sends the peer never receives.
    struct Pending {
      const char* what;
      rdmx_request_t* req = nullptr;
      rdmx_status_info_t st{};
      int done = 0;
    };
    std::vector<Pending> reqs;
    rdmx_request_t* req = nullptr;  // set by each call before post() reads it
    auto post = [&](const char* what, int rc) {
      EXPECT_EQ(rc, RDMX_OK) << what << ": " << rdmx_last_error(ctx);
      reqs.push_back({what, req});
    };
    if (rank == 0)
      post("the 256 MiB send",
           rdmx_isend(ctx, 1, 0, 5, buf.data(), kLen, 0, nullptr, nullptr, &req));
    else
      post("the 256 MiB receive",
           rdmx_irecv(ctx, 0, 0, 5, buf.data(), kLen, nullptr, nullptr, &req));
    for (auto& b : small)
      post("a receive never matched",
           rdmx_irecv(ctx, peer, 0, 7, b, sizeof b, nullptr, nullptr, &req));
    for (int i = 0; i < 2; ++i)
      post("a 1 MiB send never received",
           rdmx_isend(ctx, peer, 0, 8, rndv.data(), kRndv, 0, nullptr, nullptr, &req));
    post("a synchronous send never received", rdmx_isend(ctx, peer, 0, 9, sync_msg, sizeof sync_msg,
                                                         RDMX_SEND_SYNC, nullptr, nullptr, &req));
    bool told = false;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    for (size_t left = reqs.size(); left > 0 && Clock::now() < deadline;) {
      rdmx_progress(ctx);
      for (auto& p : reqs)
        if (!p.done && (rdmx_test(p.req, &p.done, &p.st), p.done)) --left;
      rdmx_stats_t s;
      rdmx_get_stats(ctx, &s);
      if (rank == 1 && !told && s.rdma_reads > 0) {
        told = true;
        pair.tell_ready();
      }
    }
    std::string why = rdmx_last_error(ctx);
    std::printf("rank %d: %s\n", rank, why.c_str());
    for (auto& p : reqs) {
      EXPECT_TRUE(p.done) << "rank " << rank << ": " << p.what << " did not end";
      EXPECT_EQ(p.st.error, RDMX_ERR_PEER_LOST) << "rank " << rank << ": " << p.what << ": " << why;
      rdmx_request_free(ctx, p.req);
    }
    EXPECT_NE(why.find("IBV_EVENT_PORT_ERR"), std::string::npos) << why;
    EXPECT_NE(why.find("device " + dev + " port 1"), std::string::npos) << why;
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
