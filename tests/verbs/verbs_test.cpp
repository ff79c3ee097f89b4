#include "verbs/verbs_test.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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
}  // namespace rdmx::test
