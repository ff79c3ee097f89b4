// The libfabric backend's own behaviour over the tcp provider: the connect data limit,
// rejects whose reason reaches the connecting side in words, an unreachable peer, and
// a peer process killed in the middle of a rendezvous.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "config.h"
#include "harness/world.h"
#include "rdmx/rdmx.h"
#if RDMX_BUILD_OFI
#include "fabric/ofi/ofi_fabric.h"
#include "protocol/connect_msg.h"
#endif

namespace rdmx::test {
namespace {

using Clock = std::chrono::steady_clock;

class OfiTcp : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("ofi-tcp");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend ofi-tcp: " << why;
  }
};

rdmx_context_t* open_ctx(int rank, int size, uint64_t job_key, const SettingList& extra = {}) {
  OwnedSettings s(SettingList{{"RDMX_OFI_PROVIDER", "tcp"}} + extra);
  EXPECT_EQ(s.error(), "");
  rdmx_init_params_t p{rank, size, "ofi", job_key, s.get()};
  rdmx_context_t* ctx = nullptr;
  EXPECT_EQ(rdmx_init(&p, &ctx), RDMX_OK) << rdmx_last_error(nullptr);
  return ctx;
}

// One side of an address exchange over a pipe: length, then bytes.
bool send_address(int fd, rdmx_context_t* ctx) {
  auto mine = address_of(ctx);
  uint32_t len = uint32_t(mine.size());
  return ::write(fd, &len, 4) == 4 && ::write(fd, mine.data(), len) == ssize_t(len);
}
bool read_address(int fd, std::vector<uint8_t>& peer) {
  uint32_t len = 0;
  if (::read(fd, &len, 4) != 4 || len > 256) return false;
  peer.resize(len);
  return ::read(fd, peer.data(), len) == ssize_t(len);
}

// A rank in a child process, with a pipe each way for the address exchange: body runs
// in the child with its ends (to the parent, from the parent) and must not return. pid
// is negative if the pipes or the fork failed.
struct ChildRank {
  pid_t pid = -1;
  int from_child = -1;
  int to_child = -1;
};
ChildRank fork_rank(const std::function<void(int to_parent, int from_parent)>& body) {
  int up[2], down[2];
  if (::pipe(up) != 0) return {};
  if (::pipe(down) != 0) {
    ::close(up[0]);
    ::close(up[1]);
    return {};
  }
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(up[0]);
    ::close(down[1]);
    body(up[1], down[0]);
    _exit(0);
  }
  ::close(up[1]);
  ::close(down[0]);
  if (pid < 0) {
    ::close(up[0]);
    ::close(down[1]);
    return {};
  }
  return {pid, up[0], down[1]};
}

// Progresses every context until req completes or the time runs out.
bool drive(std::initializer_list<rdmx_context_t*> ctxs, rdmx_request_t* req, rdmx_status_info_t* st,
           int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  int done = 0;
  while (Clock::now() < deadline) {
    for (auto* c : ctxs) rdmx_progress(c);
    rdmx_test(req, &done, st);
    if (done) return true;
  }
  return false;
}

TEST_F(OfiTcp, WrongJobKeyIsRejectedWithTheReasonInWords) {
  rdmx_context_t* a = open_ctx(0, 2, 1111);
  rdmx_context_t* b = open_ctx(1, 2, 2222);
  ASSERT_TRUE(a && b);
  auto aa = address_of(a), ab = address_of(b);
  rdmx_add_peer(a, 1, ab.data(), ab.size());
  rdmx_add_peer(b, 0, aa.data(), aa.size());
  uint64_t v = 42;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a, b}, req, &st, 20000)) << "the rejected send never completed";
  EXPECT_EQ(st.error, RDMX_ERR_REJECTED);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("rank 1 rejected the connection"), std::string::npos) << why;
  EXPECT_NE(why.find("job key mismatch"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
  rdmx_finalize(b);
}

TEST_F(OfiTcp, NobodyListeningFailsTheSendAsUnreachable) {
  rdmx_context_t* gone = open_ctx(1, 2, 7);
  ASSERT_TRUE(gone);
  auto addr = address_of(gone);
  rdmx_finalize(gone);  // its port is closed now
  rdmx_context_t* a = open_ctx(0, 2, 7);
  ASSERT_TRUE(a);
  rdmx_add_peer(a, 1, addr.data(), addr.size());
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a}, req, &st, 20000)) << "the send to a closed port never completed";
  EXPECT_EQ(st.error, RDMX_ERR_UNREACHABLE);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("nobody accepts connections"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
}

TEST_F(OfiTcp, AnAddressOfAnotherFabricIsRefusedClearly) {
  rdmx_context_t* a = open_ctx(0, 2, 7);
  ASSERT_TRUE(a);
  uint8_t junk[12] = {'L', 'O', 'O', 'P', 1, 0, 0, 0, 16, 0, 0, 0};
  rdmx_add_peer(a, 1, junk, sizeof junk);
  uint64_t v = 1;
  rdmx_request_t* req = nullptr;
  ASSERT_EQ(rdmx_isend(a, 1, 0, 5, &v, sizeof v, 0, nullptr, nullptr, &req), RDMX_OK);
  rdmx_status_info_t st{};
  ASSERT_TRUE(drive({a}, req, &st, 5000));
  EXPECT_NE(st.error, RDMX_OK);
  std::string why = rdmx_last_error(a);
  EXPECT_NE(why.find("not a libfabric address"), std::string::npos) << why;
  rdmx_request_free(a, req);
  rdmx_finalize(a);
}

// The child's half of the killed-peer test: rank 1, which sends a large message to
// rank 0, receives one from it, tells the parent once it is reading, and then just
// progresses until it is killed.
[[noreturn]] void doomed_rank(int to_parent, int from_parent, size_t size) {
  rdmx_context_t* c =
      open_ctx(1, 2, 99, {{"RDMX_RNDV_CHUNK", "4096"}, {"RDMX_MAX_RD_ATOMIC", "1"}});
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

TEST_F(OfiTcp, PeerKilledMidRendezvousFailsPendingRequestsInBoundedTime) {
  constexpr size_t kSize = 64 << 20;  // 16384 READs of 4 KiB, one at a time
  ChildRank child =
      fork_rank([](int to_parent, int from_parent) { doomed_rank(to_parent, from_parent, kSize); });
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
      open_ctx(0, 2, 99, {{"RDMX_RNDV_CHUNK", "4096"}, {"RDMX_MAX_RD_ATOMIC", "1"}});
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
    int done = 0;
    rdmx_test(recv, &done, nullptr);
    ASSERT_FALSE(done) << "the whole message arrived before the peer could be killed";
    if (child_reading && st.rdma_reads >= 4) break;
    ASSERT_LT(Clock::now(), deadline) << "the rendezvous never started";
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  reaper.pid = 0;

  auto killed = Clock::now();
  for (rdmx_request_t* r : {recv, send, idle}) {
    rdmx_status_info_t st{};
    int rc = rdmx_wait(c, r, 20000, &st);
    ASSERT_EQ(rc, RDMX_OK) << "a request of the dead peer did not complete";
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
TEST_F(OfiTcp, MessagesSentBeforeThePeerLeftAreNotLost) {
  constexpr int kCount = 50;  // within the credit window: the sender never waits
  ChildRank child = fork_rank([](int to_parent, int from_parent) {
    rdmx_context_t* c = open_ctx(1, 2, 5);
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
  rdmx_context_t* c = open_ctx(0, 2, 5);
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

#if RDMX_BUILD_OFI
// A sink that records what the fabric reports and rejects every request.
struct RecordingSink {
  ofi::Fabric* fabric = nullptr;
  std::vector<uint8_t> request;
  bool got_request = false;
  bool rejected = false;
  std::vector<uint8_t> reject_data;
  std::string conn_error;

  template <class Request>
  void on_connect_request(Request* req, const uint8_t* pdata, size_t len) {
    got_request = true;
    request.assign(pdata, pdata + len);
    fabric->reject(req, "no", 2);
  }
  void on_established(void*, const fabric::ConnAttrs&, const uint8_t*, size_t) {}
  void on_rejected(void*, const uint8_t* pdata, size_t len, const char*) {
    rejected = true;
    reject_data.assign(pdata, pdata + len);
  }
  void on_conn_error(void*, fabric::Failure, const char* why) { conn_error = why; }
  void on_recv(void*, uint64_t, uint32_t) {}
  void on_send_done(void*, uint64_t) {}
  void on_read_done(void*, uint64_t) {}
  void on_wr_error(void*, uint64_t, fabric::Failure, const char*) {}
};

TEST_F(OfiTcp, ConnectDataLimitIsCheckedAndTheWholeLimitArrives) {
  Settings s;
  s.ofi_provider = "tcp";
  ofi::Fabric a, b;
  std::string err;
  ASSERT_EQ(a.open(s, 0, err), RDMX_OK) << err;
  ASSERT_EQ(b.open(s, 1, err), RDMX_OK) << err;
  size_t limit = a.max_connect_data();
  EXPECT_EQ(limit + sizeof(ofi::CmHeader), 256u) << "tcp's FI_OPT_CM_DATA_SIZE is 256";
  EXPECT_GE(limit, sizeof(protocol::CmMessage));

  std::vector<uint8_t> addr(b.address(nullptr, 0));
  b.address(addr.data(), addr.size());
  std::vector<uint8_t> data(limit + 1);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 1);

  ofi::Conn* too_big = nullptr;
  ASSERT_EQ(a.create_conn(addr.data(), addr.size(), nullptr, nullptr, &too_big, err), RDMX_OK)
      << err;
  err.clear();
  EXPECT_EQ(a.connect(too_big, data.data(), limit + 1, err), RDMX_ERR_INVALID);
  EXPECT_NE(err.find("exceeds the limit of " + std::to_string(limit)), std::string::npos) << err;
  EXPECT_NE(err.find("FI_OPT_CM_DATA_SIZE"), std::string::npos) << err;
  a.disconnect(too_big);

  ofi::Conn* exact = nullptr;
  ASSERT_EQ(a.create_conn(addr.data(), addr.size(), nullptr, nullptr, &exact, err), RDMX_OK);
  ASSERT_EQ(a.connect(exact, data.data(), limit, err), RDMX_OK) << err;
  RecordingSink sa, sb;
  sa.fabric = &a;
  sb.fabric = &b;
  auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!sa.rejected && sa.conn_error.empty() && Clock::now() < deadline) {
    a.progress(sa);
    b.progress(sb);
  }
  ASSERT_TRUE(sb.got_request);
  EXPECT_EQ(sb.request, std::vector<uint8_t>(data.begin(), data.begin() + long(limit)))
      << "every byte up to the limit arrives, in order";
  ASSERT_TRUE(sa.rejected) << sa.conn_error;
  EXPECT_EQ(std::string(sa.reject_data.begin(), sa.reject_data.end()), "no");
}

TEST_F(OfiTcp, AnAbsentProviderIsNamedWithWhatExists) {
  Settings s;
  s.ofi_provider = "no-such-provider";
  ofi::Fabric f;
  std::string err;
  EXPECT_EQ(f.open(s, 0, err), RDMX_ERR_NO_DEVICE);
  EXPECT_NE(err.find("'no-such-provider'"), std::string::npos) << err;
  EXPECT_NE(err.find("tcp"), std::string::npos) << "the available providers are listed: " << err;
}
#endif

}  // namespace
}  // namespace rdmx::test
