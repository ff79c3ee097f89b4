// Helpers for the verbs backend's own tests. Every test body runs in a child process: a
// device opened by the test runner would be inherited by the ranks it forks later, and
// the kernel refuses verbs commands from any process but the one that opened it.
//
// A RawEnd is one verbs::Fabric driven directly by the test through a recording sink,
// so a test can play a peer that rdmx itself would never be: one that rejects with a
// chosen reason, sends a forged request, posts no receive, or watches what comes first.
#pragma once

#include <gtest/gtest.h>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/verbs/verbs_fabric.h"
#include "harness/world.h"
#include "protocol/connect_msg.h"
#include "protocol/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx::test {

class VerbsCm : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = backend_unavailable("verbs");
    if (!why.empty()) GTEST_SKIP() << "SKIPPED backend verbs: " << why;
  }
};

// Runs body in a child process and reports its failures (or a timeout) here.
void in_child(const std::function<void()>& body, int timeout_s = 120);
// Why a one-rank verbs context with these settings does not come up ("" if it does),
// found out in a child process.
std::string init_error(const SettingList& settings);

// Everything a backend reports, in order.
struct Recorder {
  enum Kind { Established, Rejected, ConnError, Recv, SendDone, ReadDone, WrError };
  struct Event {
    explicit Event(Kind k) : kind(k) {}
    Kind kind;
    void* user = nullptr;
    fabric::ConnAttrs attrs{};
    std::vector<uint8_t> pdata;
    std::string why;
    fabric::Failure failure = fabric::Failure::Other;
    uint64_t wr = 0;
    uint32_t len = 0;
  };
  std::vector<Event> events;
  // Answers a connection request (accept or reject); by default: reject, no reason.
  std::function<void(verbs::ConnRequest*, const uint8_t*, size_t)> on_request;
  std::vector<uint8_t> last_request;  // its private data as delivered

  size_t count(Kind k) const;
  const Event* first(Kind k) const;

  template <class Request>
  void on_connect_request(Request* r, const uint8_t* p, size_t n) {
    last_request.assign(p, p + n);
    if (on_request) on_request(r, p, n);
  }
  void on_established(void* u, const fabric::ConnAttrs& a, const uint8_t* p, size_t n);
  void on_rejected(void* u, const uint8_t* p, size_t n, const char* why);
  void on_conn_error(void* u, fabric::Failure f, const char* why);
  void on_recv(void* u, uint64_t wr, uint32_t len);
  void on_send_done(void* u, uint64_t wr);
  void on_read_done(void* u, uint64_t wr);
  void on_wr_error(void* u, uint64_t wr, fabric::Failure f, const char* why);
};

struct RawEnd {
  verbs::Fabric fabric;
  Recorder rec;
  // Receive buffers: kBufs of kBufSize bytes, registered once.
  static constexpr uint32_t kBufs = 16, kBufSize = 256;
  std::vector<uint8_t> mem = std::vector<uint8_t>(kBufs * kBufSize);
  verbs::Fabric::Region region;

  // settings: over the defaults. srq_ok: declare shared receives.
  int open(const SettingList& settings = {}, bool srq_ok = false, std::string* err = nullptr);
  std::vector<uint8_t> address() const;
  uint8_t* buf(uint32_t i) { return mem.data() + i * kBufSize; }
  void post_recvs(verbs::Conn* c, uint32_t n);
  int progress() { return fabric.progress(rec); }
};

// Progresses every end (and the rdmx context, if any) until done() or the timeout.
bool drive(const std::function<bool()>& done, const std::vector<RawEnd*>& ends,
           rdmx_context_t* ctx = nullptr, int timeout_ms = 20000);

// An rdmx connect or accept message as rdmx itself would send it, sealed with the
// job's key (an accept's MAC bound to the request's nonce).
protocol::CmMessage cm_message(protocol::CmKind kind, uint64_t job, int32_t src, int32_t dst,
                               uint32_t qp_num, const uint8_t* bound = nullptr);
// A header-only wire message (Hello, Credit).
wire::Header header(wire::Type t, int32_t source, uint32_t seq);

// A context of the verbs fabric in this process (rank of size, job key).
rdmx_context_t* verbs_context(int32_t rank, int32_t size, uint64_t job,
                              const SettingList& settings = {});

// Two ranks of one job as two forked children of the test, for tests that do to a rank
// what threads cannot survive (kill it, take its link down). The parent passes each
// child the other's address; a child tells the parent once its transfer is under way.
class ForkedPair {
 public:
  using Clock = std::chrono::steady_clock;
  ForkedPair();
  ~ForkedPair();
  ForkedPair(const ForkedPair&) = delete;
  ForkedPair& operator=(const ForkedPair&) = delete;

  // Forks both ranks, each running child(rank) (which ends with _exit), and passes the
  // addresses between them.
  void start(const std::function<void(int rank)>& child);
  // In a child: hands its address (none if ctx is null) to the parent and adds the
  // other rank's. False if ctx is null or the exchange failed.
  bool join(rdmx_context_t* ctx, int rank);
  // In a child: the transfer is under way.
  void tell_ready();
  // In the parent: whether a child said so within timeout_ms.
  bool wait_ready(int timeout_ms);
  pid_t pid(int rank) const { return pids_[rank]; }
  // In the parent: rank's exit status; past the deadline it is killed and false returned.
  bool reap(int rank, Clock::time_point deadline, int& status);

 private:
  int up_[2], down_[2][2], ready_[2];
  pid_t pids_[2] = {-1, -1};
};

}  // namespace rdmx::test
