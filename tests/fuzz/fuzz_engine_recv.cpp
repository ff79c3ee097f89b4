// The engine's receive path: a context (rank 0 of 2, loopback fabric) connected to a
// raw loopback endpoint that plays rank 1 and sends whatever the input says: eager
// headers and payloads, rendezvous requests, FIN and sync acks, credit fields, sequence
// numbers. Between its messages the context posts receives and sends, probes and
// cancels, so that arrivals meet every state. The context must neither crash, hang nor
// leak; a message it cannot accept fails the connection and the requests on it.
//
// The input is a program (engine_program.h says how it is laid out): a setup, then
// operations, each a byte and its operands.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/loopback/loopback_fabric.h"
#include "fuzz/engine_program.h"
#include "fuzz/fuzz_input.h"
#include "protocol/connect_msg.h"
#include "protocol/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx::fuzz {
namespace {

constexpr uint64_t kJobKey = 0x5eed;
// RDMX_FUZZ_VERBOSE=1: say what each run did (for writing seeds), with rdmx's log.
const bool kVerbose = std::getenv("RDMX_FUZZ_VERBOSE") != nullptr;
constexpr uint32_t kPeerBufs = 64;
constexpr uint32_t kPeerBufSize = 4096;  // more than the context's largest message
constexpr size_t kReadable = 64 * 1024;  // what rendezvous requests may point at

// Rank 1, played by hand over the loopback fabric.
struct RawPeer {
  loopback::Fabric fab;
  loopback::Conn* conn = nullptr;
  std::vector<uint8_t> recv_mem = std::vector<uint8_t>(size_t(kPeerBufs) * kPeerBufSize);
  std::vector<uint8_t> readable = std::vector<uint8_t>(kReadable, 0xa5);
  loopback::Fabric::Region recv_region, read_region;
  uint32_t seq = 0;                  // of its next message
  uint64_t last_sender_request = 0;  // from the context's last RTS or synchronous send
  bool established = false, closed = false;

  // The sink of the raw endpoint's progress.
  void on_connect_request(loopback::ConnRequest* req, const uint8_t*, size_t) {
    auto m = protocol::make_cm(protocol::CmKind::Reject, 1, 0);
    m.reason = protocol::RejectReason::Duplicate;
    fab.reject(req, &m, sizeof m);
  }
  void on_established(void*, const fabric::ConnAttrs&, const uint8_t*, size_t) {
    established = true;
  }
  void on_rejected(void*, const uint8_t*, size_t, const char*) { closed = true; }
  void on_conn_error(void*, fabric::Failure, const char*) { closed = true; }
  // Rank 1's endpoint takes every message in a buffer (RDMX_LOOPBACK_SMALL_UNBUFFERED=0).
  void on_recv_unbuffered(void*, const uint8_t*, uint32_t) {}
  void on_recv(void*, uint64_t wr, uint32_t len) {
    uint8_t* b = recv_mem.data() + wr * kPeerBufSize;
    wire::Header h;
    if (len >= sizeof h) {
      std::memcpy(&h, b, sizeof h);
      size_t at = h.type() == wire::Type::Rts ? sizeof h + offsetof(wire::RtsBody, sender_request)
                  : h.type() == wire::Type::Eager && (h.flags & wire::kSync) ? sizeof h
                                                                             : 0;
      if (at && len >= at + 8) std::memcpy(&last_sender_request, b + at, 8);
    }
    fabric::RecvBuf rb{b, kPeerBufSize, wr};
    fab.post_recvs(conn, &rb, 1, recv_region);
  }
  void on_send_done(void*, uint64_t) {}
  void on_read_done(void*, uint64_t) {}
  void on_wr_error(void*, uint64_t, fabric::Failure, const char*) { closed = true; }
};

class Run {
 public:
  explicit Run(Input& in) : in_(in) {}
  ~Run();
  void go();

 private:
  bool setup();
  void send_raw();
  void post_recv();
  void post_send();
  void probe();
  void tagged();
  // Whether a message of status st is one a tagged receive of want could take.
  static bool matches(const rdmx_status_info_t& st, int32_t src, uint64_t want, uint64_t ignore);
  void cancel_all();
  void test_all();
  void progress(int rounds);
  void* buffer(uint64_t len);

  Input& in_;
  rdmx_context_t* ctx_ = nullptr;
  std::unique_ptr<RawPeer> peer_;
  std::vector<rdmx_request_t*> reqs_;
  // What each tagged receive asked for: its source, tag and mask.
  struct Want {
    int32_t src;
    uint64_t tag, ignore;
  };
  std::unordered_map<rdmx_request_t*, Want> wants_;
  std::vector<std::unique_ptr<uint8_t[]>> bufs_;  // outlive the context
};

Run::~Run() {
  if (ctx_) {
    // The peer goes first, so that finalize does not wait for credits it will never send.
    if (peer_ && peer_->conn) peer_->fab.disconnect(peer_->conn);
    progress(4);
    for (rdmx_request_t* r : reqs_) rdmx_request_free(ctx_, r);
    FUZZ_CHECK(rdmx_finalize(ctx_) == RDMX_OK);
  }
}

void* Run::buffer(uint64_t len) {
  bufs_.push_back(std::make_unique<uint8_t[]>(len ? len : 1));
  std::memset(bufs_.back().get(), 0x3c, len);
  return bufs_.back().get();
}

void Run::progress(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    FUZZ_CHECK(rdmx_progress(ctx_) >= 0);
    if (peer_) peer_->fab.progress(*peer_);
  }
}

bool Run::setup() {
  Setup s = read_setup(in_);
  rdmx_settings_t* so = nullptr;
  rdmx_settings_create(&so);
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_EAGER_LIMIT", s.eager_limit) == RDMX_OK);
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_CREDITS", s.credits) == RDMX_OK);
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_SRQ", s.srq) == RDMX_OK);
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_LOOPBACK_SMALL_UNBUFFERED", s.unbuffered) == RDMX_OK);
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_RNDV_CHUNK", 4096) == RDMX_OK);
  // Segments are taken where the eager limit allows them (1024 and up).
  FUZZ_CHECK(rdmx_settings_set_int(so, "RDMX_MIDSIZE_LIMIT", 8192) == RDMX_OK);
  rdmx_init_params_t p{0, 2, "loopback", kJobKey, so};
  int rc = rdmx_init(&p, &ctx_);
  rdmx_settings_free(so);
  FUZZ_CHECK(rc == RDMX_OK);

  peer_ = std::make_unique<RawPeer>();
  RawPeer& r = *peer_;
  Settings defaults;
  std::string err;
  FUZZ_CHECK(r.fab.open(defaults, 1, err) == RDMX_OK);
  uint8_t addr[64];
  size_t alen = sizeof addr;
  FUZZ_CHECK(rdmx_address(ctx_, addr, &alen) == RDMX_OK);
  uint8_t mine[64];
  size_t mlen = r.fab.address(mine, sizeof mine);
  FUZZ_CHECK(rdmx_add_peer(ctx_, 1, mine, mlen) == RDMX_OK);
  FUZZ_CHECK(r.fab.create_conn(addr, alen, nullptr, nullptr, &r.conn, err) == RDMX_OK);
  r.fab.reg(r.recv_mem.data(), r.recv_mem.size(), fabric::kLocalWrite, r.recv_region, err);
  r.fab.reg(r.readable.data(), r.readable.size(), fabric::kRemoteRead, r.read_region, err);
  std::vector<fabric::RecvBuf> bufs;
  for (uint32_t i = 0; i < kPeerBufs; ++i)
    bufs.push_back({r.recv_mem.data() + size_t(i) * kPeerBufSize, kPeerBufSize, i});
  r.fab.post_recvs(r.conn, bufs.data(), int(bufs.size()), r.recv_region);
  auto m = protocol::make_cm(protocol::CmKind::Connect, 1, 0);
  m.eager_limit = s.peer_eager_limit;
  m.midsize_kib = 8;
  m.credits = s.peer_credits;
  m.ctrl_credits = s.peer_ctrl_credits;
  m.flags = s.peer_flags & ~kUnsealed;
  // A fixed nonce: every run has a context of its own, so nothing is a replay, and a run
  // replays the same. The MAC is the one a job without a secret expects, unless the
  // program asks for an offer the context must refuse.
  std::memset(m.nonce, 0x5a, sizeof m.nonce);
  if (!(s.peer_flags & kUnsealed)) protocol::seal(m, protocol::job_key_mac_key(kJobKey), nullptr);
  FUZZ_CHECK(r.fab.connect(r.conn, &m, sizeof m, err) == RDMX_OK);
  for (int i = 0; i < 64 && !r.established && !r.closed; ++i) progress(1);
  return r.established;
}

// One SEND from rank 1: the input's bytes, with the fields the program asks to have
// made right (otherwise the first wrong sequence number would end every run).
void Run::send_raw() {
  RawPeer& r = *peer_;
  uint8_t fix = in_.u8();
  std::vector<uint8_t> msg = in_.bytes(in_.u16() % kMaxRawSend);
  Patch patch{r.seq, r.last_sender_request, reinterpret_cast<uintptr_t>(r.readable.data()),
              r.readable.size(), r.read_region.key()};
  apply_fixes(msg, fix, patch);
  static const uint8_t nothing = 0;  // an empty SEND still names a buffer
  fabric::Sge sge{msg.empty() ? &nothing : msg.data(), uint32_t(msg.size()), nullptr};
  ++r.seq;
  r.fab.send(r.conn, &sge, 1, 0, 0);
  progress(2);
}

void Run::post_recv() {
  int32_t src = pick_source(in_.u8());
  uint32_t cid = in_.u8() % 4;
  int32_t tag = pick_tag(in_.u8());
  uint64_t len = in_.u16() % kMaxBuffer;
  rdmx_request_t* q = nullptr;
  if (rdmx_irecv(ctx_, src, cid, tag, buffer(len), len, nullptr, nullptr, &q) == RDMX_OK)
    reqs_.push_back(q);
}

void Run::post_send() {
  uint8_t how = in_.u8();
  int32_t dest = how & 1 ? 0 : 1;  // rank 0 is this context itself
  uint32_t flags = how & 2 ? RDMX_SEND_SYNC : 0;
  uint32_t cid = in_.u8() % 4;
  int32_t tag = pick_tag(in_.u8());
  if (tag == RDMX_ANY_TAG) tag = 0;
  uint64_t len = in_.u16() % kMaxBuffer;
  rdmx_request_t* q = nullptr;
  if (rdmx_isend(ctx_, dest, cid, tag, buffer(len), len, flags, nullptr, nullptr, &q) == RDMX_OK)
    reqs_.push_back(q);
  progress(1);
}

void Run::probe() {
  int32_t src = pick_source(in_.u8());
  uint32_t cid = in_.u8() % 4;
  int32_t tag = pick_tag(in_.u8());
  int found = 0;
  rdmx_status_info_t st{};
  rdmx_message_t* msg = nullptr;
  FUZZ_CHECK(rdmx_improbe(ctx_, src, cid, tag, &found, &msg, &st) == RDMX_OK);
  if (!found) return;
  FUZZ_CHECK(st.length == st.sent_length);
  rdmx_request_t* q = nullptr;
  uint64_t len = st.length < kMaxBuffer ? st.length : kMaxBuffer;
  FUZZ_CHECK(rdmx_imrecv(ctx_, msg, buffer(len), len, nullptr, nullptr, &q) == RDMX_OK);
  reqs_.push_back(q);
}

bool Run::matches(const rdmx_status_info_t& st, int32_t src, uint64_t want, uint64_t ignore) {
  uint64_t got = uint64_t(st.context_id) << 32 | uint32_t(st.tag);
  return (src == RDMX_ANY_SOURCE || st.source == src) && ((got ^ want) & ~ignore) == 0;
}

void Run::tagged() {
  int32_t src = pick_source(in_.u8());
  uint64_t tag = uint64_t(in_.u8() % 4) << 32 | uint32_t(pick_tag(in_.u8()));
  uint8_t how = in_.u8();
  uint64_t ignore = kTaggedMasks[how & 3];
  uint64_t len = in_.u16() % kMaxBuffer;
  rdmx_request_t* q = nullptr;
  if (how & kTaggedProbe) {
    int found = 0;
    rdmx_status_info_t st{};
    rdmx_message_t* msg = nullptr;
    FUZZ_CHECK(rdmx_improbe_tagged(ctx_, src, tag, ignore, &found, &msg, &st) == RDMX_OK);
    if (!found) return;
    FUZZ_CHECK(matches(st, src, tag, ignore));
    FUZZ_CHECK(rdmx_imrecv(ctx_, msg, buffer(len), len, nullptr, nullptr, &q) == RDMX_OK);
  } else if (rdmx_irecv_tagged(ctx_, src, tag, ignore, buffer(len), len, nullptr, nullptr, &q) !=
             RDMX_OK) {
    return;
  }
  reqs_.push_back(q);
  wants_[q] = {src, tag, ignore};
}

void Run::cancel_all() {
  for (rdmx_request_t* q : reqs_) FUZZ_CHECK(rdmx_cancel(ctx_, q) == RDMX_OK);
}

void Run::test_all() {
  std::vector<rdmx_request_t*> open;
  for (rdmx_request_t* q : reqs_) {
    int done = 0;
    rdmx_status_info_t st{};
    FUZZ_CHECK(rdmx_test(q, &done, &st) == RDMX_OK);
    if (!done) {
      open.push_back(q);
      continue;
    }
    FUZZ_CHECK(st.length <= st.sent_length || st.error != RDMX_OK);
    auto w = wants_.find(q);
    if (w != wants_.end()) {
      if (st.error == RDMX_OK || st.error == RDMX_ERR_TRUNCATED)
        FUZZ_CHECK(matches(st, w->second.src, w->second.tag, w->second.ignore));
      wants_.erase(w);
    }
    if (kVerbose)
      std::fprintf(stderr, "fuzz: request done: source %d tag %d length %llu of %llu: %s\n",
                   st.source, st.tag, static_cast<unsigned long long>(st.length),
                   static_cast<unsigned long long>(st.sent_length), rdmx_strerror(st.error));
    rdmx_request_free(ctx_, q);
  }
  reqs_.swap(open);
}

void Run::go() {
  if (!setup()) return;
  for (int ops = 0; ops < kMaxOps && !in_.empty(); ++ops) {
    switch (Op(in_.u8() % kOps)) {
      case Op::RawSend: send_raw(); break;
      case Op::Recv: post_recv(); break;
      case Op::Send: post_send(); break;
      case Op::Progress: progress(1 + in_.u8() % 16); break;
      case Op::Probe: probe(); break;
      case Op::Tagged: tagged(); break;
      case Op::Cancel: cancel_all(); break;
      case Op::Test: test_all(); break;
      case Op::PeerLeaves:
        peer_->fab.disconnect(peer_->conn);
        progress(2);
        break;
    }
  }
  progress(8);
  test_all();
  if (kVerbose) {
    rdmx_stats_t st{};
    rdmx_get_stats(ctx_, &st);
    std::fprintf(stderr,
                 "fuzz: %zu requests open, %llu unexpected, %llu reads, %llu credit messages; "
                 "last error: %s\n",
                 reqs_.size(), static_cast<unsigned long long>(st.unexpected),
                 static_cast<unsigned long long>(st.rdma_reads),
                 static_cast<unsigned long long>(st.credit_messages), rdmx_last_error(ctx_));
  }
}

}  // namespace
}  // namespace rdmx::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!rdmx::fuzz::kVerbose) rdmx_set_log_handler([](int, int32_t, const char*, void*) {}, nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rdmx::fuzz::Input in(data, size);
  rdmx::fuzz::Run(in).go();
  return 0;
}
