// The libfabric backend: FI_EP_MSG endpoints over any provider that offers FI_MSG and
// FI_RMA (tcp by default, verbs where an RDMA device exists; RDMX_OFI_PROVIDER).
//
// One context owns one fabric, domain, event queue (connection management), completion
// queue (every connection's sends, receives and READs) and passive endpoint listening on
// an ephemeral port. The address blob carries the provider's name and the passive
// endpoint's address (fi_getname). Connections carry the engine's connect message as
// fi_connect/fi_accept/fi_reject param data, checked against FI_OPT_CM_DATA_SIZE.
// Everything is driven from progress(): the queues are read without blocking.
//
// Memory registration follows the provider's mr_mode: descriptors are passed where
// FI_MR_LOCAL asks for them, remote addresses are offsets from the region's base unless
// FI_MR_VIRT_ADDR, keys are requested unless FI_MR_PROV_KEY: random 64-bit keys
// (ofi_keys.h), drawn again if one is already in use in the domain.
// rdmx's hints leave out FI_MR_ENDPOINT, so no provider that binds regions to
// endpoints is chosen: a region belongs to the domain, and every connection of this
// context, that is any connected peer, can read it with its key. tcp has no endpoint
// binding to offer: it clears FI_MR_ENDPOINT (and every other mr_mode bit, libfabric
// 1.17) even when the hints offer it, and keeps its regions in the domain's key map,
// which every remote read is checked against.
//
// Shared receive context (RDMX_SRQ=1, ofi_shared.cpp): one fi_srx_context per context
// holds every connection's receives. A completion from it does not say which endpoint
// the message came in on, so each side gives its peer, in the connect or accept data, a
// number naming its own connection (a 16-bit tag); the peer sends every
// message with that number as remote CQ data, and the completion's data finds the
// connection here. A side without a shared context gives 0 and gets untagged messages.
//
// Read depth: libfabric exposes no negotiated RDMA READ depth (the verbs provider asks
// rdma_cm for the device maximum; tcp serves reads in software without a limit). Each
// side offers min(RDMX_MAX_RD_ATOMIC, tx_attr->size, 255), never more READs in flight
// than the cap nor than its transmit queue holds, in a small header this backend puts
// before the engine's bytes in the param data; a connection's initiator depth and
// responder resources are the minimum of both offers.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "container/ring.h"
#include "fabric/fabric.h"
#include "fabric/ofi/ofi_keys.h"
#include "fabric/ofi/ofi_resource.h"
#include "rdmx/rdmx.h"

namespace rdmx::ofi {

struct Conn;

// One posted operation. The provider may use the leading context (FI_CONTEXT and
// FI_CONTEXT2 modes); the completion's op_context points back here.
struct Op {
  enum Kind : uint8_t { Recv, Send, Read, SharedRecv };
  fi_context2 ctx;
  Conn* conn = nullptr;
  uint64_t wr = 0;
  uint32_t index = 0;
  Kind kind = Recv;
  bool live = false;  // posted and not yet reported
};
// The index of an Op that belongs to no table: a connection's stand-in for its
// unreported sends, named in the error completion if one of them fails.
inline constexpr uint32_t kUnpooled = ~0u;

// A fixed set of operation slots, sized from the provider's queue depths when the
// connection is made, so that posting never allocates.
class OpTable {
 public:
  void init(Conn* c, uint32_t n, Op::Kind default_kind);
  Op* take() {
    if (free_count_ == 0) return nullptr;
    Op* op = &ops_[free_[--free_count_]];
    op->live = true;
    return op;
  }
  void give(Op* op) {
    if (op->index == kUnpooled) return;
    op->live = false;
    free_[free_count_++] = op->index;
  }
  uint32_t size() const { return size_; }
  Op& at(uint32_t i) { return ops_[i]; }

 private:
  std::unique_ptr<Op[]> ops_;
  std::unique_ptr<uint32_t[]> free_;
  uint32_t size_ = 0;
  uint32_t free_count_ = 0;
};

// What poll_cq reports.
struct Completion {
  enum Kind : uint8_t { Recv, SendDone, ReadDone, WrError };
  Kind kind;
  fabric::Failure failure;
  uint32_t len;
  uint64_t wr;
  void* user;
  const char* text;
};

struct Conn {
  enum class State : uint8_t { Created, Connecting, Accepting, Up, Down };
  Fid<fid_ep> ep;
  void* user = nullptr;
  bool active = false;
  State state = State::Created;
  uint32_t serial = 0;
  uint16_t tag = 0;           // names it to this side's shared receive context (0: none)
  uint16_t peer_tag = 0;      // remote CQ data on every send: the peer's shared receives
  std::vector<uint8_t> dest;  // active side: the peer's listening address
  std::string peer;           // that address in words, for messages
  fabric::ConnAttrs attrs{};  // final once established
  bool closing = false;       // the event queue reported it down; eq_text_ says why
  uint64_t down_at = 0;       // Fabric::cq_drains_ when it went Down
  OpTable tx, rx;
  Op unreported;  // what an unsignaled inline send names (selective completion)
  // Passive side: receives that completed before the connection was reported
  // established, handed over right after it is (the engine expects that order).
  Ring<Completion> early{1};
};

// What this backend puts before the engine's bytes in connect, accept and reject
// param data.
struct CmHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t rd_atom;  // READs the sender may have outstanding and serves
  uint16_t tag;     // the sender receives from a shared context: send with this CQ data (0: no)
};
inline constexpr uint32_t kCmHeaderMagic = 0x464f5852;  // "RXOF"

// A connection request from the event queue, handed to the engine, which accepts or
// rejects it before on_connect_request returns.
struct ConnRequest {
  fi_info* info = nullptr;  // owned until the request is answered
  Conn* conn = nullptr;     // the connection created for it, if any
  uint8_t peer_rd_atom = 1;
  uint16_t peer_tag = 0;
  bool answered = false;
};

// What poll_eq reports.
struct CmEvent {
  enum Kind : uint8_t { ConnectRequest, Established, Rejected, ConnError };
  Kind kind;
  fabric::Failure failure;
  void* user;
  const uint8_t* data;
  size_t len;
  const char* text;
  const fabric::ConnAttrs* attrs;
  Conn* conn;
};

class Fabric {
 public:
  static constexpr const char* kName = "ofi";
  // What the tcp provider gets without settings (eager_limit, credit_window,
  // lone_rndv_chunk).
  static constexpr uint64_t kTcpEagerLimit = 128 * 1024;
  static constexpr uint32_t kTcpCredits = 24;
  static constexpr uint64_t kTcpLoneRndvChunk = 256 * 1024;
  using Conn = ofi::Conn;
  using ConnRequest = ofi::ConnRequest;

  class Region {
   public:
    const void* desc() const { return desc_; }
    uint64_t key() const { return key_; }
    // An address the peer can READ: virtual, or an offset from the region's base.
    uint64_t remote_address(const void* p) const { return reinterpret_cast<uintptr_t>(p) - base_; }

   private:
    friend class Fabric;
    fid_mr* mr_ = nullptr;
    void* desc_ = nullptr;
    uint64_t key_ = 0;
    uintptr_t base_ = 0;
  };

  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int open(const Settings& s, int32_t rank, std::string& err);
  size_t address(uint8_t* buf, size_t cap) const;
  // What the engine may put in connect data: the provider's limit less CmHeader.
  size_t max_connect_data() const { return cm_data_size_ - sizeof(CmHeader); }
  // Its counters in the engine's statistics (rdmx_get_stats).
  void fill_stats(rdmx_stats_t& s) const { s.library_discovery_ns = discovery_ns_; }

  int create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user, Conn** out,
                  std::string& err);
  uint32_t qp_num(const Conn* c) const { return c->serial; }
  int connect(Conn* c, const void* pdata, size_t plen, std::string& err);
  int accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err);
  void reject(ConnRequest* req, const void* pdata, size_t plen);
  void disconnect(Conn* c);
  // Down, every flush reported, and the completion queue read empty since it went down
  // (closing its endpoint may have queued completions naming its operations): release()
  // frees its operation tables.
  bool settled(const Conn* c) const {
    return c->state == Conn::State::Down && deferred_.empty() && c->early.empty() &&
           cq_drains_ > c->down_at;
  }
  void release(Conn* c);

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err);
  void dereg(Region& r);
  // The tcp provider serves a READ from the virtual address when it arrives; other
  // providers register with the device, which pins the pages.
  bool pins_memory() const { return !tcp(); }

  // The limits this fabric suggests (RDMX_EAGER_LIMIT=-1, RDMX_CREDITS=-1). Over tcp
  // every SEND is a trip through the kernel's TCP stack and a completion the provider
  // signals through a pipe, a cost per message whatever its size, and the provider
  // emulates a READ with a request and a reply: messages to 128 KiB go in one SEND, with
  // 24 credits (fewer cost windows of small messages more credit messages), so receive
  // buffers are 28 x 128 KiB = 3.7 MB per peer, touched only as far as messages fill them
  // (docs/performance.md). Other providers have real RDMA reads.
  uint64_t eager_limit(const Conn*) const { return max_eager_limit(); }
  uint64_t max_eager_limit() const { return tcp() ? kTcpEagerLimit : fabric::kDefaultEagerLimit; }
  uint32_t credit_window(const Conn*) const {
    return tcp() ? kTcpCredits : fabric::kDefaultCredits;
  }
  // The READs it suggests (RDMX_RNDV_CHUNK=-1): as the verbs backend does, smaller ones
  // and fewer in flight when the verbs provider drives a software device (rxe, siw).
  uint64_t rndv_chunk(const Conn*) const {
    return software_device_ ? fabric::kSoftwareDeviceRndvChunk : fabric::kDefaultRndvChunk;
  }
  // Over tcp a message read alone goes in quarter-MiB READs: the provider answers each
  // with one reply, and several replies overlap where one whole one would not (a 1 MiB
  // ping-pong takes two thirds of the time; docs/performance.md). Behind other messages
  // whole chunks carry as much.
  uint64_t lone_rndv_chunk(const Conn* c) const {
    return tcp() ? kTcpLoneRndvChunk : rndv_chunk(c);
  }
  uint32_t max_reads(const Conn*) const {
    return software_device_ ? fabric::kSoftwareDeviceMaxReads : UINT32_MAX;
  }

  int post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r);
  // Shared receive context (RDMX_SRQ=1), as the verbs backend's: declared before open(),
  // then every receive buffer is posted with post_shared_recv().
  void enable_shared_receive() { shared_receive_ok_ = true; }
  int post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr);
  uint32_t shared_receive_depth() const { return shared_.size(); }
  int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr);
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr);

  template <class Sink>
  int progress(Sink& sink);
  // Sleeps on the completion and event queues' file descriptors (fi_trywait, then
  // poll); where the provider has none, sleeps a little instead (at most 1 ms).
  int wait(int timeout_ms);

  // What this context runs on, for tools and tests.
  const std::string& provider() const { return provider_; }
  const fabric::ConnAttrs& conn_attrs() const { return attrs_; }

 private:
  bool tcp() const { return provider_ == "tcp"; }
  static constexpr int kBatch = 32;
  static constexpr size_t kMaxCmData = 512;
  static constexpr int kMaxSge = 4;
  // Queues past a rank's first fabric::kRoomyConns endpoints (setup_endpoint).
  static constexpr uint32_t kLeanQueue = 63;

  int bind_cq(Conn* c);
  void settle_attrs(Conn* c, uint8_t peer_rd_atom);
  int open_shared_receive(std::string& err);
  // The connection a shared receive's completion names (its remote CQ data), or null.
  Conn* sender_of(uint64_t flags, uint64_t data) const;
  // Posts a shared receive's buffer again, for a message no connection of this context
  // sent (a missing or unknown tag).
  void repost_stray(Op* op);
  // Posts the buffer recorded for a shared receive's operation slot.
  ssize_t post_shared_buf(Op* op);
  int post_recv(Conn* c, void* buf, uint32_t len, const Region& r,
                uint64_t wr);  // one of post_recvs
  int poll_cq(Completion* out, int max);
  // Polls one batch of completions and hands them to sink.
  template <class Sink>
  int completions(Sink& sink);
  bool poll_eq(CmEvent& ev);
  bool eq_error(CmEvent& ev);
  // The event queue is read once in kEqInterval progress calls, and on the next call
  // after anything that may bring an event (a connection step, a wait, an event): each
  // read costs the tcp provider a system call (its connection manager's epoll_wait),
  // and connection events are rare, while a rank waiting for a message calls progress
  // in a loop.
  static constexpr uint32_t kEqInterval = 32;
  void eq_due() { eq_countdown_ = 0; }
  void finish_request();
  int setup_endpoint(Conn* c, fi_info* info, std::string& err);
  void go_down(Conn* c);
  void flush(Conn* c, OpTable& t);
  Conn* conn_of(fid_t f) const;
  // Header and engine bytes into cm_out_; returns the total length.
  // tag: the connection's name to this side's shared receive context, or 0.
  size_t wrap(const void* pdata, size_t plen, uint16_t tag);
  // Strips a CmHeader from received param data: the engine's bytes and the peer's offer
  // (the READs it serves, the tag it wants on every send).
  static const uint8_t* unwrap(const uint8_t* data, size_t& len, uint8_t& rd_atom, uint16_t& tag);

  uint32_t eq_countdown_ = 0;
  std::string provider_;
  bool software_device_ = false;  // the verbs provider on rxe or siw (rndv_chunk)
  Info info_;                     // the chosen provider, domain and limits
  fabric::ConnAttrs attrs_{};
  size_t cm_data_size_ = 0;
  bool mr_local_ = false;
  // Sends are reported only when asked (FI_SELECTIVE_COMPLETION): where the provider
  // keeps no state in the operation's context (no FI_CONTEXT mode) and accepts the bind.
  bool selective_ = false;
  bool mr_virt_addr_ = false;
  bool mr_prov_key_ = false;
  RandomKeys keys_;  // where the provider takes requested keys
  uint32_t next_serial_ = 1;
  uint32_t rx_depth_ = 0;
  uint64_t provider_rx_size_ = 0;  // the receives the provider offers, before rdmx's choice
  uint64_t discovery_ns_ = 0;      // this thread's CPU time in open()'s fi_getinfo
  uint32_t tx_depth_ = 0;
  uint8_t rd_atom_ = 1;
  int32_t rank_ = 0;
  std::vector<uint8_t> listen_addr_;

  Fid<fid_fabric> fabric_;
  Fid<fid_domain> domain_;
  Fid<fid_eq> eq_;
  Fid<fid_cq> cq_;
  Fid<fid_pep> pep_;
  std::unordered_set<fid_mr*> mrs_;  // closed at teardown if the engine still holds any
  std::vector<std::unique_ptr<Conn>> conns_;

  // The shared receive context and its posted buffers (ofi_shared.cpp).
  bool shared_receive_ok_ = false;
  Fid<fid_ep> srx_;
  OpTable shared_;
  struct SharedBuf {
    void* addr;
    uint32_t len;
    void* desc;
  };
  std::unique_ptr<SharedBuf[]> shared_bufs_;  // by the Op's index
  // Connections by tag (16 bits, to fit the verbs provider's 55 bytes of connect data
  // beside the engine's 47); a tag is given again once its connection was released,
  // when nothing it sent can still arrive.
  std::vector<Conn*> tagged_{nullptr};
  std::vector<uint16_t> free_tags_;
  int take_tag(Conn* c, std::string& err);

  ConnRequest request_;
  Ring<Completion> deferred_{64};  // flushes of operations on closed connections
  uint64_t cq_drains_ = 0;         // reads of the completion queue that found it empty
  int cq_fd_ = -1;                 // the queues' wait objects (FI_WAIT_FD), or -1
  int eq_fd_ = -1;
  alignas(fi_eq_cm_entry) uint8_t eq_buf_[sizeof(fi_eq_cm_entry) + kMaxCmData];
  uint8_t err_data_[kMaxCmData];
  uint8_t cm_out_[kMaxCmData];
  char eq_text_[320];
  char cq_text_[320];
};

template <class Sink>
int Fabric::completions(Sink& sink) {
  Completion batch[kBatch];
  int n = poll_cq(batch, kBatch);
  for (int i = 0; i < n; ++i) {
    const Completion& c = batch[i];
    switch (c.kind) {
      case Completion::Recv: sink.on_recv(c.user, c.wr, c.len); break;
      case Completion::SendDone: sink.on_send_done(c.user, c.wr); break;
      case Completion::ReadDone: sink.on_read_done(c.user, c.wr); break;
      case Completion::WrError: sink.on_wr_error(c.user, c.wr, c.failure, c.text); break;
    }
  }
  return n;
}

template <class Sink>
int Fabric::progress(Sink& sink) {
  int handled = completions(sink);
  if (eq_countdown_) {
    --eq_countdown_;
    return handled;
  }
  eq_countdown_ = kEqInterval - 1;
  CmEvent ev;
  while (poll_eq(ev)) {
    eq_due();  // events come in runs: look again on the next call
    ++handled;
    switch (ev.kind) {
      case CmEvent::ConnectRequest:
        sink.on_connect_request(&request_, ev.data, ev.len);
        finish_request();
        break;
      case CmEvent::Established:
        sink.on_established(ev.user, *ev.attrs, ev.data, ev.len);
        while (!ev.conn->early.empty()) {
          Completion c = ev.conn->early.pop();
          sink.on_recv(c.user, c.wr, c.len);
          ++handled;
        }
        break;
      case CmEvent::Rejected: sink.on_rejected(ev.user, ev.data, ev.len, ev.text); break;
      case CmEvent::ConnError:
        // What the peer sent before it went away completes first, so none of it is lost.
        for (int n; (n = completions(sink)) > 0;) handled += n;
        sink.on_conn_error(ev.user, ev.failure, ev.text);
        break;
    }
  }
  return handled;
}

}  // namespace rdmx::ofi
