// What happens when the peer process goes away: killed in the middle of a rendezvous,
// or finalized right after sending. Run on every backend whose ranks are processes.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/engine_test.h"
#include "harness/child_rank.h"

namespace rdmx::test {
namespace {

using Clock = std::chrono::steady_clock;

// The child's half of the killed-peer test: rank 1, which sends a large message to
// rank 0, receives one from it, tells the parent once it is reading, and then just
// progresses until it is killed.
[[noreturn]] void doomed_rank(const std::string& backend, int to_parent, int from_parent,
                              size_t size) {
  rdmx_context_t* c =
      open_rank(backend, 1, 2, 99, {{"RDMX_RNDV_CHUNK", "4096"}, {"RDMX_MAX_RD_ATOMIC", "1"}});
  if (!c) _exit(2);
  std::vector<uint8_t> peer;
  if (!send_address(to_parent, c) || !read_address(from_parent, peer)) _exit(3);
  rdmx_add_peer(c, 0, peer.data(), peer.size());
  std::vector<uint8_t> out(size, 0x5a), in(size);
  rdmx_request_t *s = nullptr, *r = nullptr;
  rdmx_isend(c, 0, 0, 1, out.data(), size, 0, nullptr, nullptr, &s);
  rdmx_irecv(c, 0, 0, 2, in.data(), size, nullptr, nullptr, &r);
  bool told = false;
  for (;;) {
    rdmx_progress(c);
    rdmx_stats_t st{};
    rdmx_get_stats(c, &st);
    if (!told && st.rdma_reads >= 4) {
      told = ::write(to_parent, "R", 1) == 1;
    }
  }
}

TEST_P(ProcessTest, PeerKilledMidRendezvousFailsPendingRequestsInBoundedTime) {
  constexpr size_t kSize = 64 << 20;  // 16384 READs of 4 KiB, one at a time
  ChildRank child = fork_rank([this](int to_parent, int from_parent) {
    doomed_rank(GetParam(), to_parent, from_parent, kSize);
  });
  pid_t pid = child.pid;
  ASSERT_GE(pid, 0);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{pid};

  rdmx_context_t* c =
      open_rank(GetParam(), 0, 2, 99, {{"RDMX_RNDV_CHUNK", "4096"}, {"RDMX_MAX_RD_ATOMIC", "1"}});
  ASSERT_TRUE(c);
  std::vector<uint8_t> peer;
  ASSERT_TRUE(read_address(child.from_child, peer));
  ASSERT_TRUE(send_address(child.to_child, c));
  rdmx_add_peer(c, 1, peer.data(), peer.size());

  // Rank 0 reads rank 1's message, rank 1 reads rank 0's, and one more receive waits
  // for a message rank 1 will never send.
  std::vector<uint8_t> in(kSize), out(kSize, 0xa5);
  uint64_t never = 0;
  rdmx_request_t *recv = nullptr, *send = nullptr, *idle = nullptr;
  ASSERT_EQ(rdmx_irecv(c, 1, 0, 1, in.data(), kSize, nullptr, nullptr, &recv), RDMX_OK);
  ASSERT_EQ(rdmx_isend(c, 1, 0, 2, out.data(), kSize, 0, nullptr, nullptr, &send), RDMX_OK);
  ASSERT_EQ(rdmx_irecv(c, 1, 0, 3, &never, sizeof never, nullptr, nullptr, &idle), RDMX_OK);

  // Wait until both sides are in the middle of their READs.
  bool child_reading = false;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    rdmx_progress(c);
    if (!child_reading) {
      pollfd p{child.from_child, POLLIN, 0};
      char ch;
      if (::poll(&p, 1, 0) == 1 && ::read(child.from_child, &ch, 1) == 1) child_reading = true;
    }
    rdmx_stats_t st{};
    rdmx_get_stats(c, &st);
    // A READ that needs nothing of the peer (a cross-memory read) may finish this
    // side's receive before the kill: it must then be whole.
    int done = 0;
    rdmx_status_info_t rs{};
    rdmx_test(recv, &done, &rs);
    if (done) {
      EXPECT_EQ(rs.error, RDMX_OK);
      EXPECT_EQ(in, std::vector<uint8_t>(kSize, 0x5a));
      rdmx_request_free(c, recv);
      recv = nullptr;
    }
    if (child_reading && (st.rdma_reads >= 4 || !recv)) break;
    ASSERT_LT(Clock::now(), deadline) << "the rendezvous never started";
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  reaper.pid = 0;

  auto killed = Clock::now();
  for (rdmx_request_t* r : {recv, send, idle}) {
    if (!r) continue;
    rdmx_status_info_t st{};
    int rc = rdmx_wait(c, r, 20000, &st);
    ASSERT_EQ(rc, RDMX_OK) << "a request of the dead peer did not complete";
    // The send may have been read whole (and acknowledged) before the kill, where the
    // peer's READs need nothing of this side; the receive that was never sent may not.
    if (r == send && st.error == RDMX_OK) {
      rdmx_request_free(c, r);
      continue;
    }
    EXPECT_EQ(st.error, RDMX_ERR_PEER_LOST) << rdmx_strerror(st.error);
    rdmx_request_free(c, r);
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - killed);
  EXPECT_LT(took.count(), 10000) << "failing the requests took " << took.count() << " ms";
  std::string why = rdmx_last_error(c);
  EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  rdmx_finalize(c);
}

// Messages a peer sent just before it finalized and exited are all delivered, even
// when they arrive together with the connection's shutdown.
TEST_P(ProcessTest, MessagesSentBeforeThePeerLeftAreNotLost) {
  constexpr int kCount = 20;  // within every fabric's credit window (24 over tcp): no waiting
  ChildRank child = fork_rank([this](int to_parent, int from_parent) {
    rdmx_context_t* c = open_rank(GetParam(), 1, 2, 5);
    if (!c) _exit(2);
    std::vector<uint8_t> peer;
    if (!send_address(to_parent, c) || !read_address(from_parent, peer)) _exit(3);
    rdmx_add_peer(c, 0, peer.data(), peer.size());
    for (uint32_t i = 0; i < kCount; ++i) {
      rdmx_request_t* r = nullptr;
      if (rdmx_isend(c, 0, 0, 7, &i, sizeof i, 0, nullptr, nullptr, &r) != RDMX_OK ||
          rdmx_wait(c, r, 20000, nullptr) != RDMX_OK)
        _exit(4);
      rdmx_request_free(c, r);
    }
    rdmx_finalize(c);
    _exit(0);
  });
  pid_t pid = child.pid;
  ASSERT_GE(pid, 0);
  rdmx_context_t* c = open_rank(GetParam(), 0, 2, 5);
  ASSERT_TRUE(c);
  std::vector<uint8_t> peer;
  ASSERT_TRUE(read_address(child.from_child, peer));
  ASSERT_TRUE(send_address(child.to_child, c));
  rdmx_add_peer(c, 1, peer.data(), peer.size());
  // Progress until the peer has connected, then let it send everything and leave
  // while this side does not look.
  auto deadline = Clock::now() + std::chrono::seconds(20);
  rdmx_stats_t st{};
  while (st.connections == 0 && Clock::now() < deadline) {
    rdmx_progress(c);
    rdmx_get_stats(c, &st);
  }
  ASSERT_EQ(st.connections, 1u);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the sender failed: " << status;
  for (uint32_t i = 0; i < kCount; ++i) {
    uint32_t got = ~0u;
    rdmx_request_t* r = nullptr;
    ASSERT_EQ(rdmx_irecv(c, 1, 0, 7, &got, sizeof got, nullptr, nullptr, &r), RDMX_OK);
    rdmx_status_info_t s{};
    ASSERT_EQ(rdmx_wait(c, r, 10000, &s), RDMX_OK) << "message " << i << " never arrived";
    EXPECT_EQ(s.error, RDMX_OK) << "message " << i << ": " << rdmx_last_error(c);
    EXPECT_EQ(got, i);
    rdmx_request_free(c, r);
  }
  rdmx_finalize(c);
}

}  // namespace
}  // namespace rdmx::test
