// The shared-memory fabric's handshake under load: many ranks of one host connecting
// to one at once, a rank that looks at its sockets late, and a requester that says
// nothing.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fabric/shm/shm_fabric.h"
#include "fabric/shm/shm_faults.h"
#include "fabric/shm/shm_socket.h"
#include "harness/child_rank.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {
namespace {

class ShmConnect : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("shm");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend shm: " << why;
  }
  void TearDown() override { shm::faults().request_deadline_ms = -1; }
};

// Open descriptors of this process.
size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

// Every other rank of a job of peers + 1 sends 8 bytes to rank 0 at once, before rank 0
// looks at its listener: every connection request waits in the backlog. Every send and
// receive must complete without error, and every value arrive.
void all_send_to_rank_zero(int peers, uint32_t key) {
  std::vector<rdmx_context_t*> ctx(size_t(peers) + 1, nullptr);
  for (int i = 0; i <= peers; ++i) {
    ctx[size_t(i)] = open_rank("shm", i, peers + 1, key);
    ASSERT_NE(ctx[size_t(i)], nullptr) << "rank " << i;
  }
  std::vector<uint8_t> zero = address_of(ctx[0]);
  std::vector<uint64_t> out(size_t(peers) + 1), in(size_t(peers) + 1, 0);
  std::vector<rdmx_request_t*> sends(size_t(peers) + 1, nullptr), recvs(size_t(peers) + 1, nullptr);
  for (int i = 1; i <= peers; ++i) {
    std::vector<uint8_t> a = address_of(ctx[size_t(i)]);
    ASSERT_EQ(rdmx_add_peer(ctx[0], i, a.data(), a.size()), RDMX_OK);
    ASSERT_EQ(rdmx_add_peer(ctx[size_t(i)], 0, zero.data(), zero.size()), RDMX_OK);
    out[size_t(i)] = uint64_t(i) * 1000003u;
    ASSERT_EQ(rdmx_isend(ctx[size_t(i)], 0, 0, 5, &out[size_t(i)], 8, 0, nullptr, nullptr,
                         &sends[size_t(i)]),
              RDMX_OK)
        << "rank " << i << ": " << rdmx_last_error(ctx[size_t(i)]);
  }
  for (int i = 1; i <= peers; ++i)
    ASSERT_EQ(rdmx_irecv(ctx[0], i, 0, 5, &in[size_t(i)], 8, nullptr, nullptr, &recvs[size_t(i)]),
              RDMX_OK);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int left = 2 * peers;
  std::vector<bool> done(2 * (size_t(peers) + 1), false);
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (auto* c : ctx) rdmx_progress(c);
    for (int i = 1; i <= peers; ++i)
      for (int side = 0; side < 2; ++side) {
        size_t k = size_t(2 * i + side);
        if (done[k]) continue;
        int flag = 0;
        rdmx_status_info_t st{};
        rdmx_test(side ? recvs[size_t(i)] : sends[size_t(i)], &flag, &st);
        if (!flag) continue;
        done[k] = true;
        --left;
        EXPECT_EQ(st.error, RDMX_OK) << (side ? "receive from" : "send of") << " rank " << i << ": "
                                     << rdmx_last_error(ctx[side ? 0 : size_t(i)]);
      }
  }
  EXPECT_EQ(left, 0) << "requests still open after 60 s";
  for (int i = 1; i <= peers; ++i) {
    EXPECT_EQ(in[size_t(i)], out[size_t(i)]) << "from rank " << i;
    rdmx_request_free(ctx[size_t(i)], sends[size_t(i)]);
    rdmx_request_free(ctx[0], recvs[size_t(i)]);
  }
  for (auto* c : ctx) rdmx_finalize(c);
}

// An alltoall's first round among 201 ranks: with a listen backlog of 128, the 129th
// connect failed at once ("its backlog is full").
TEST_F(ShmConnect, TwoHundredRanksConnectingAtOnceAreAllAccepted) {
  all_send_to_rank_zero(200, 31);
}

// Among 256 oversubscribed ranks on two cores a rank gets the processor for a few
// milliseconds a second: it accepted a peer's request in one look at its sockets and read
// it only seconds later, after the request's deadline, and the request was dropped
// unread (its sender saw "the peer answered with something that is not an rdmx
// accept"). With every request late as soon as it is accepted, each must still be
// answered: a request is dropped for silence only when nothing has arrived on it.
TEST_F(ShmConnect, ARequestReadAfterItsDeadlineIsAnsweredNotDropped) {
  shm::faults().request_deadline_ms = 0;
  all_send_to_rank_zero(40, 32);
}

// A process of this user that connects to a rank's socket and never sends its request
// holds an entry of the listener: it is closed once the deadline has passed, and not
// before.
TEST_F(ShmConnect, ARequesterThatSaysNothingIsClosedAtItsDeadline) {
  rdmx_context_t* c = open_rank("shm", 0, 2, 33);
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> blob = address_of(c);
  shm::Address a{};
  ASSERT_EQ(blob.size(), sizeof a);
  std::memcpy(&a, blob.data(), sizeof a);
  std::string err;
  int s = shm::connect_socket(std::string(a.name, strnlen(a.name, sizeof a.name)), err);
  ASSERT_GE(s, 0) << err;
  auto closed = [&](int ms) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      rdmx_progress(c);
      char b;
      ssize_t n = ::recv(s, &b, 1, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  shm::faults().request_deadline_ms = 400;
  EXPECT_FALSE(closed(100)) << "closed before its deadline";
  EXPECT_TRUE(closed(2000)) << "still open 2 s after a deadline of 400 ms";
  ::close(s);
  rdmx_finalize(c);
}

// What arrives on a rank's socket is checked before anything of it is used: a request
// that carries a memory file that is not sealed (a peer could shrink it under the
// rank's mapping) is dropped with its descriptor, and the rank still answers the next.
TEST_F(ShmConnect, ARequestWithAnUnsealedSegmentIsDroppedAndTheRankGoesOn) {
  rdmx_context_t* c = open_rank("shm", 0, 2, 34);
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> blob = address_of(c);
  shm::Address a{};
  ASSERT_EQ(blob.size(), sizeof a);
  std::memcpy(&a, blob.data(), sizeof a);
  std::string err;
  int s = shm::connect_socket(std::string(a.name, strnlen(a.name, sizeof a.name)), err);
  ASSERT_GE(s, 0) << err;
  int mem = ::memfd_create("not-sealed", MFD_CLOEXEC);
  ASSERT_GE(mem, 0);
  ASSERT_EQ(::ftruncate(mem, 1 << 16), 0);
  size_t before = open_descriptors();
  shm::Frame f{};
  f.magic = shm::Frame::kMagic;
  f.kind = shm::Frame::Connect;
  f.version = shm::kLayoutVersion;
  f.rd_atomic = 1;
  ASSERT_TRUE(shm::send_frame(s, &f, sizeof f, mem));
  bool closed = false;
  for (int i = 0; i < 2000 && !closed; ++i) {
    rdmx_progress(c);
    char b;
    ssize_t n = ::recv(s, &b, 1, MSG_DONTWAIT);
    closed = n == 0 || (n < 0 && errno != EAGAIN);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(closed) << "the request was not dropped";
  EXPECT_EQ(open_descriptors(), before) << "the rank kept the file it was sent";
  ::close(s);
  ::close(mem);
  rdmx_finalize(c);
  all_send_to_rank_zero(3, 35);  // and a rank of this process still connects
}

}  // namespace
}  // namespace rdmx::test
