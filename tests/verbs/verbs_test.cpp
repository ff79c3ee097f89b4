#include "verbs/verbs_test.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace rdmx::test {

void in_child(const std::function<void()>& body, int timeout_s) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  while (::waitpid(pid, &st, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      ADD_FAILURE() << "the test body was killed after " << timeout_s << " s";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
      << "the test body failed in its child process (its output is above), status " << st;
}

std::string init_error(const SettingList& settings) { return probe_init("verbs", settings); }

size_t Recorder::count(Kind k) const {
  size_t n = 0;
  for (const Event& e : events) n += e.kind == k;
  return n;
}

const Recorder::Event* Recorder::first(Kind k) const {
  for (const Event& e : events)
    if (e.kind == k) return &e;
  return nullptr;
}

void Recorder::on_established(void* u, const fabric::ConnAttrs& a, const uint8_t* p, size_t n) {
  Event e(Established);
  e.user = u;
  e.attrs = a;
  if (p) e.pdata.assign(p, p + n);
  events.push_back(std::move(e));
}

void Recorder::on_rejected(void* u, const uint8_t* p, size_t n, const char* why) {
  Event e(Rejected);
  e.user = u;
  if (p) e.pdata.assign(p, p + n);
  e.why = why;
  events.push_back(std::move(e));
}

void Recorder::on_conn_error(void* u, fabric::Failure f, const char* why) {
  Event e(ConnError);
  e.user = u;
  e.failure = f;
  e.why = why;
  events.push_back(std::move(e));
}

void Recorder::on_recv(void* u, uint64_t wr, uint32_t len) {
  Event e(Recv);
  e.user = u;
  e.wr = wr;
  e.len = len;
  events.push_back(std::move(e));
}

void Recorder::on_send_done(void* u, uint64_t wr) {
  Event e(SendDone);
  e.user = u;
  e.wr = wr;
  events.push_back(std::move(e));
}

void Recorder::on_read_done(void* u, uint64_t wr) {
  Event e(ReadDone);
  e.user = u;
  e.wr = wr;
  events.push_back(std::move(e));
}

void Recorder::on_wr_error(void* u, uint64_t wr, fabric::Failure f, const char* why) {
  Event e(WrError);
  e.user = u;
  e.wr = wr;
  e.failure = f;
  e.why = why;
  events.push_back(std::move(e));
}

int RawEnd::open(const SettingList& settings, bool srq_ok, std::string* err_out) {
  Settings s;
  std::string err;
  for (const auto& [name, value] : settings) {
    if (!s.set(name, value, err)) {
      ADD_FAILURE() << "bad test setting " << name << "='" << value << "': " << err;
      return RDMX_ERR_INVALID;
    }
  }
  if (srq_ok) fabric.enable_shared_receive();
  int rc = fabric.open(s, 1, err);
  if (rc == RDMX_OK) rc = fabric.reg(mem.data(), mem.size(), fabric::kLocalWrite, region, err);
  if (err_out) *err_out = err;
  return rc;
}

std::vector<uint8_t> RawEnd::address() const {
  std::vector<uint8_t> a(fabric.address(nullptr, 0));
  fabric.address(a.data(), a.size());
  return a;
}

void RawEnd::post_recvs(verbs::Conn* c, uint32_t n) {
  std::vector<fabric::RecvBuf> bufs(n);
  for (uint32_t i = 0; i < n; ++i) bufs[i] = {buf(i), kBufSize, i};
  ASSERT_EQ(fabric.post_recvs(c, bufs.data(), int(n), region), RDMX_OK);
}

bool drive(const std::function<bool()>& done, const std::vector<RawEnd*>& ends, rdmx_context_t* ctx,
           int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    for (RawEnd* e : ends) e->progress();
    if (ctx) rdmx_progress(ctx);
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

protocol::CmMessage cm_message(protocol::CmKind kind, uint64_t job, int32_t src, int32_t dst,
                               uint32_t qp_num, const uint8_t* bound) {
  protocol::CmMessage m = protocol::make_cm(kind, src, dst);
  m.qp_num = qp_num;
  m.eager_limit = 8192;
  m.credits = RawEnd::kBufs - 4;
  m.ctrl_credits = 4;
  m.flags = protocol::kFlowControl;
  if (kind != protocol::CmKind::Reject) {
    protocol::fresh_nonce(m);
    protocol::seal(m, protocol::job_key_mac_key(job), bound);
  }
  return m;
}

wire::Header header(wire::Type t, int32_t source, uint32_t seq) {
  wire::Header h{};
  h.version_type = wire::Header::make_vt(t);
  h.source = source;
  h.seq = seq;
  return h;
}

rdmx_context_t* verbs_context(int32_t rank, int32_t size, uint64_t job,
                              const SettingList& settings) {
  // The verbs fabric alone: these tests speak its addresses and private data directly.
  OwnedSettings owned(SettingList{{"RDMX_SHM", "off"}} + settings);
  EXPECT_EQ(owned.error(), "");
  rdmx_init_params_t p{rank, size, "verbs", job, owned.get()};
  rdmx_context_t* ctx = nullptr;
  int rc = rdmx_init(&p, &ctx);
  EXPECT_EQ(rc, RDMX_OK) << rdmx_last_error(nullptr);
  return ctx;
}

ForkedPair::ForkedPair() {
  EXPECT_EQ(::pipe(up_), 0);
  EXPECT_EQ(::pipe(down_[0]), 0);
  EXPECT_EQ(::pipe(down_[1]), 0);
  EXPECT_EQ(::pipe(ready_), 0);
}

ForkedPair::~ForkedPair() {
  for (int r = 0; r < 2; ++r)
    if (pids_[r] > 0 && ::waitpid(pids_[r], nullptr, WNOHANG) == 0) {
      ::kill(pids_[r], SIGKILL);
      ::waitpid(pids_[r], nullptr, 0);
    }
  for (int fd :
       {up_[0], up_[1], down_[0][0], down_[0][1], down_[1][0], down_[1][1], ready_[0], ready_[1]})
    ::close(fd);
}

void ForkedPair::start(const std::function<void(int rank)>& child) {
  std::fflush(stdout);
  std::fflush(stderr);
  for (int r = 0; r < 2; ++r) {
    pids_[r] = ::fork();
    ASSERT_GE(pids_[r], 0);
    if (pids_[r] == 0) {
      child(r);
      _exit(4);  // child() ends with _exit
    }
  }
  std::vector<uint8_t> addrs[2];
  for (int i = 0; i < 2; ++i) {
    int32_t rank = -1;
    uint32_t len = 0;
    ASSERT_EQ(::read(up_[0], &rank, 4), 4);
    ASSERT_EQ(::read(up_[0], &len, 4), 4);
    ASSERT_TRUE(rank == 0 || rank == 1);
    addrs[rank].resize(len);
    ASSERT_EQ(::read(up_[0], addrs[rank].data(), len), ssize_t(len));
  }
  ASSERT_EQ(addrs[0].size(), addrs[1].size());
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(::write(down_[r][1], addrs[1 - r].data(), addrs[1 - r].size()),
              ssize_t(addrs[1 - r].size()));
}

bool ForkedPair::join(rdmx_context_t* ctx, int rank) {
  std::vector<uint8_t> a = ctx ? address_of(ctx) : std::vector<uint8_t>();
  uint32_t len = uint32_t(a.size());
  // One write, so that the two children's messages cannot interleave.
  std::vector<uint8_t> msg(8 + len);
  std::memcpy(msg.data(), &rank, 4);
  std::memcpy(msg.data() + 4, &len, 4);
  std::memcpy(msg.data() + 8, a.data(), len);
  if (::write(up_[1], msg.data(), msg.size()) != ssize_t(msg.size())) return false;
  std::vector<uint8_t> other(len);
  if (::read(down_[rank][0], other.data(), len) != ssize_t(len) || !ctx) return false;
  return rdmx_add_peer(ctx, 1 - rank, other.data(), other.size()) == RDMX_OK;
}

void ForkedPair::tell_ready() {
  if (::write(ready_[1], "R", 1) != 1) _exit(3);
}

bool ForkedPair::wait_ready(int timeout_ms) {
  pollfd p{ready_[0], POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

bool ForkedPair::reap(int rank, Clock::time_point deadline, int& status) {
  while (::waitpid(pids_[rank], &status, WNOHANG) != pids_[rank]) {
    if (Clock::now() > deadline) {
      ::kill(pids_[rank], SIGKILL);
      ::waitpid(pids_[rank], &status, 0);
      return false;
    }
    ::usleep(10000);
  }
  return true;
}

}  // namespace rdmx::test
