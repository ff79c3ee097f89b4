// The device's asynchronous events: the link under the RDMA device goes down, or the
// device is removed, in the middle of a rendezvous, and every request either rank has
// going (the transfer, receives, rendezvous and synchronous sends still waiting for the
// peer) fails at once with a message that names the device (and the port and event),
// instead of waiting for the transport's retries to run out. It breaks the device, so
// it runs only in the Soft-RoCE VM, as the last step of the tier
// (tests/vm/tier.d/60-device-events), and brings it back.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
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
    if (removed_) {
      // The removal ends once no process holds the device; then it comes back.
      if (removal_.joinable()) removal_.join();
      run("rdma link add " + dev_ + " type rxe netdev " + netdev_);
    }
    link("up");
    // Back to where the other tests found it: the port active again.
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (read_line(port_state()).find("ACTIVE") == std::string::npos && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_NE(read_line(port_state()).find("ACTIVE"), std::string::npos)
        << dev_ << " did not come back: " << read_line(port_state());
  }
  void run(const std::string& cmd) { EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd; }
  void link(const char* state) { run("ip link set dev " + netdev_ + " " + state); }
  // Removes the device, from another thread: the kernel finishes the removal only once
  // the processes using it have let it go.
  void remove_device() {
    removed_ = true;
    removal_ = std::thread([this] { run("rdma link delete " + dev_); });
  }
  std::string port_state() const { return "/sys/class/infiniband/" + dev_ + "/ports/1/state"; }

  // Two ranks, each with every kind of request going (a 256 MiB transfer being read,
  // receives no one matches, rendezvous sends and a synchronous send the peer never
  // receives); break_device() strikes while the receiver reads. Every request of both
  // ranks must end with RDMX_ERR_PEER_LOST within 15 s; each rank's last error must
  // contain every string of each_says, and one rank's at least that of one_says.
  void every_request_fails(const std::function<void()>& break_device,
                           const std::vector<std::string>& each_says, const std::string& one_says);

  std::string dev_, netdev_;
  bool removed_ = false;
  std::thread removal_;
};

void VerbsDeviceEvents::every_request_fails(const std::function<void()>& break_device,
                                            const std::vector<std::string>& each_says,
                                            const std::string& one_says) {
  constexpr size_t kLen = 256 << 20;  // far more than moves before the device breaks
  constexpr size_t kRndv = 1 << 20;   // a rendezvous the peer never matches
  constexpr size_t kWhyLen = 1024;
  // Each rank's last error, where this process can read it.
  void* shared =
      ::mmap(nullptr, 2 * kWhyLen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* whys = static_cast<char*>(shared);
  std::memset(whys, 0, 2 * kWhyLen);
  ForkedPair pair;
  pair.start([&](int rank) {
    rdmx_context_t* ctx = verbs_context(rank, 2, kJob, {{"RDMX_RNDV_CHUNK", "65536"}});
    if (!pair.join(ctx, rank)) _exit(3);
    int peer = 1 - rank;
    std::vector<uint8_t> buf(kLen, uint8_t(rank)), rndv(kRndv, uint8_t(rank));
    uint8_t small[3][8] = {}, sync_msg[8] = {};
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
    std::snprintf(whys + size_t(rank) * kWhyLen, kWhyLen, "%s", why.c_str());
    for (auto& p : reqs) {
      EXPECT_TRUE(p.done) << "rank " << rank << ": " << p.what << " did not end";
      EXPECT_EQ(p.st.error, RDMX_ERR_PEER_LOST) << "rank " << rank << ": " << p.what << ": " << why;
      rdmx_request_free(ctx, p.req);
    }
    for (const auto& text : each_says) EXPECT_NE(why.find(text), std::string::npos) << why;
    rdmx_finalize(ctx);
    std::fflush(stdout);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  });
  bool reading = pair.wait_ready(60000);
  auto t0 = Clock::now();
  break_device();
  int st[2] = {0, 0};
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(pair.reap(r, t0 + std::chrono::seconds(90), st[r]))
        << "rank " << r << " hung after the device broke";
  auto took = Clock::now() - t0;
  std::printf("both ranks ended %.0f ms after the device broke\n",
              std::chrono::duration<double, std::milli>(took).count());
  EXPECT_TRUE(reading) << "the receiver never started reading";
  EXPECT_LT(took, std::chrono::seconds(15)) << "the failure took as long as the retries";
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0) << "rank " << r << " status " << st[r];
  std::string why0 = whys, why1 = whys + kWhyLen;
  EXPECT_TRUE(why0.find(one_says) != std::string::npos || why1.find(one_says) != std::string::npos)
      << "neither rank says \"" << one_says << "\": " << why0 << " / " << why1;
  ::munmap(shared, 2 * kWhyLen);
}

// The device itself goes (rdma link delete): rdma_cm's DEVICE_REMOVAL or the device's
// IBV_EVENT_DEVICE_FATAL, whichever comes first, ends every connection, and the ranks
// let the device go so that the removal can finish.
TEST_F(VerbsDeviceEvents, DeviceRemovalFailsEveryRequestWithTheCause) {
  // Whichever rank hears of it first disconnects, and the other may learn it that way.
  every_request_fails([&] { remove_device(); }, {}, "device " + dev_);
}

TEST_F(VerbsDeviceEvents, PortDownFailsEveryRequestWithTheCause) {
  every_request_fails([&] { link("down"); }, {"IBV_EVENT_PORT_ERR", "device " + dev_ + " port 1"},
                      "device " + dev_ + " port 1");
}

}  // namespace
}  // namespace rdmx::test
