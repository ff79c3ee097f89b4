// The native verbs/rdma_cm backend: RDMA_PS_TCP connections over RC queue pairs that
// rdmx creates itself on its own protection domain, one completion queue per device
// shared by all connections, optionally one shared receive queue.
//
// Connection setup follows every field of rdma_conn_param: the private data (56 bytes
// on connect, 196 on accept), the read depths (the minimum of both devices' limits and
// RDMX_MAX_RD_ATOMIC, lowered by the passive side, final values from the CM), retry
// and RNR retry counts, flow_control (exchanged and reported), srq, and qp_num, which is
// cross-checked against the QP number in the peer's rdmx private data. The QP is moved
// through INIT, RTR and RTS with rdma_init_qp_attr and ibv_modify_qp.
//
// Everything is non-blocking and driven from progress(): the event channel is
// O_NONBLOCK and the completion queue is polled in batches. The data path (post_recvs,
// send, read, progress) neither allocates nor locks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "container/ring.h"
#include "core/idle_poll.h"
#include "core/log.h"
#include "fabric/fabric.h"
#include "fabric/rails/rail_path.h"
#include "fabric/rails/rail_spec.h"
#include "fabric/verbs/verbs_async.h"
#include "fabric/verbs/verbs_conn.h"
#include "fabric/verbs/verbs_device.h"
#include "rdmx/rdmx.h"

namespace rdmx::verbs {

class Fabric {
 public:
  static constexpr const char* kName = "verbs";
  using Conn = verbs::Conn;
  using ConnRequest = verbs::ConnRequest;

  // A memory registration. It owns its ibv_mr: dereg() or its destruction releases it.
  class Region {
   public:
    const void* desc() const { return mr_.get(); }
    uint64_t key() const { return mr_ ? mr_->rkey : 0; }
    uint64_t remote_address(const void* p) const { return reinterpret_cast<uintptr_t>(p); }
    uint32_t lkey() const { return mr_ ? mr_->lkey : 0; }

   private:
    friend class Fabric;
    Mr mr_;
  };

  // rdma_cm's private data limits for RDMA_PS_TCP.
  static constexpr size_t kConnectDataMax = 56;
  static constexpr size_t kAcceptDataMax = 196;
  static constexpr size_t kRejectDataMax = 148;

  Fabric() = default;
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int open(const Settings& s, int32_t rank, std::string& err);
  size_t address(uint8_t* buf, size_t cap) const;
  size_t max_connect_data() const { return kConnectDataMax; }

  int create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user, Conn** out,
                  std::string& err);
  uint32_t qp_num(const Conn* c) const { return c->qp ? c->qp->qp_num : 0; }
  int connect(Conn* c, const void* pdata, size_t plen, std::string& err);
  int accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err);
  void reject(ConnRequest* req, const void* pdata, size_t plen);
  void disconnect(Conn* c);
  // Reaped (its queue pair and id destroyed once every work request came back, the
  // drain behind its unsignaled sends included) and its end reported: release() frees
  // the rest (its slots, its entry for shared receives).
  bool settled(const Conn* c) const { return c->reaped && pending_.empty(); }
  void release(Conn* c);

  int reg(void* addr, size_t len, uint32_t access, Region& out, std::string& err);
  void dereg(Region& r) { r.mr_.reset(); }
  // ibv_reg_mr pins the pages the range maps at the time of the call.
  bool pins_memory() const { return true; }

  // The rendezvous READs this fabric suggests (RDMX_RNDV_CHUNK=-1): 1 MiB each, as many
  // as negotiated. A software device (rxe, siw) retransmits a lost packet by resending
  // the whole READ response after a timeout; where its packets cross a bridge or a
  // switch that drops bursts, 16 READs of 1 MiB never finish. 64 KiB with 4 in flight
  // keeps a burst within what a path's queues hold, at the same bandwidth on one host
  // (docs/performance.md).
  uint64_t rndv_chunk(const Conn*) const {
    return software_ ? fabric::kSoftwareDeviceRndvChunk : fabric::kDefaultRndvChunk;
  }
  uint32_t max_reads(const Conn*) const {
    return software_ ? fabric::kSoftwareDeviceMaxReads : UINT32_MAX;
  }

  int post_recvs(Conn* c, const fabric::RecvBuf* bufs, int n, const Region& r);
  int send(Conn* c, const fabric::Sge* sge, int n, uint32_t flags, uint64_t wr);
  int read(Conn* c, void* local, uint64_t len, const Region& r, uint64_t raddr, uint64_t rkey,
           uint64_t wr);

  template <class Sink>
  int progress(Sink& sink);
  // Sleeps on the completion channel and the rdma_cm event channel (verbs_wait.cpp).
  int wait(int timeout_ms);
  // One look (a poll() that does not wait) at the rdma_cm channel and the device's
  // event descriptor: kicks what has something to read.
  void look_at_channels();

  // Shared receive queue (RDMX_SRQ=1). The caller declares, before open(), that it
  // posts its receive buffers with post_shared_recv(); a completion then names the
  // connection the message arrived on. Without that declaration open() refuses
  // RDMX_SRQ=1, since per-connection buffers cannot be told apart in a shared queue.
  void enable_shared_receive() { shared_receive_ok_ = true; }
  int post_shared_recv(void* buf, uint32_t len, const Region& r, uint64_t wr);

  const Device& device() const { return dev_; }

  // For the rails fabric (verbs_rails.cpp): the devices RDMX_VERBS_DEVICE asks for (one,
  // several separated by commas, or all), each with the settings that open it alone;
  // the IP address in a peer's address; this device's address and subnet.
  static int rail_specs(const Settings& s, std::vector<rails::RailSpec>& out, std::string& err);
  static bool address_prefix(const uint8_t* addr, size_t len, rails::IpPrefix& out);
  rails::IpPrefix local_prefix() const;
  const std::string& device_name() const { return dev_.name(); }
  // The device failed (removed, or a fatal event): no new connection through it.
  bool device_down() const { return !device_why_.empty(); }
  // How many receives the shared queue holds (valid after open()).
  uint32_t shared_receive_depth() const { return dev_.srq_depth(); }
  // Asks the device to report (IBV_EVENT_SRQ_LIMIT_REACHED) when fewer than n receives
  // are left in the shared queue; progress() then calls the sink's
  // on_shared_receive_low() once. Armed again by calling again.
  int arm_shared_receive_limit(uint32_t n);

 private:
  // Connection management (verbs_cm.cpp).
  void start_connect(Conn* c);
  void finish_request();
  void fail(Conn* c, CmOutcome::Kind kind, fabric::Failure f, std::string why,
            const uint8_t* pdata = nullptr, uint32_t plen = 0);
  void close(Conn* c);
  void peer_gone(Conn* c, fabric::Failure f, std::string why);
  void device_removed();
  void device_failed(const std::string& why);

  // The device's asynchronous events (verbs_device_events.cpp).
  // read_device false: only what another context on the device read for this one.
  void take_async_events(bool read_device = true);
  void take_async_events_after_error(const Conn* c, ibv_wc_status status);
  void on_async_event(const AsyncEvent& e);
  void settle_setup(Conn* c);
  void mark_unsettled(Conn* c);
  void reap(Conn* c);
  void housekeeping(bool cq_drained);

  // rdma_cm events (verbs_events.cpp).
  bool next_outcome(CmOutcome& out);
  bool read_cm_event();
  void on_connect_request(rdma_cm_id* id, const uint8_t* pdata, uint32_t plen,
                          const rdma_conn_param& param);
  void on_connect_response(Conn* c, const uint8_t* pdata, uint32_t plen,
                           const rdma_conn_param& param);
  void on_conn_event(Conn* c, int event, int status, const uint8_t* pdata, uint32_t plen,
                     const rdma_conn_param& param);

  // Queue pairs (verbs_qp.cpp).
  bool create_qp(Conn* c, std::string& err);
  bool move_qp(Conn* c, ibv_qp_state to, uint32_t rd_atomic, std::string& err);
  void to_error(Conn* c);
  fabric::ConnAttrs attrs_of(const Conn* c, uint32_t initiator, uint32_t responder,
                             bool peer_flow_control) const;

  // Completions (verbs_fabric.cpp and below).
  template <class Sink>
  void deliver(Sink& sink, CmOutcome& o);
  template <class Sink>
  void complete(Sink& sink, const ibv_wc* batch, int i, int n);
  void fill_why(Conn* c, fabric::Failure f, Slot::Op op, const ibv_wc& wc);
  static fabric::Failure failure_of(ibv_wc_status s);

  Device dev_;
  int32_t rank_ = -1;
  uint32_t init_cap_ = 1;  // min(device max_qp_init_rd_atom, RDMX_MAX_RD_ATOMIC)
  bool software_ = false;  // a software device (rxe, siw): smaller READs (rndv_chunk)
  uint32_t resp_cap_ = 1;  // min(device max_qp_rd_atom, RDMX_MAX_RD_ATOMIC)
  uint8_t retry_count_ = 7;
  uint8_t rnr_retry_ = 0;
  bool flow_control_ = true;
  bool use_srq_ = false;
  bool shared_receive_ok_ = false;
  int resolve_timeout_ms_ = 2000;
  uint32_t sq_depth_ = 255;
  // Past a rank's first fabric::kRoomyConns queue pairs (sq_depth_, max_inline_).
  static constexpr uint32_t kLeanSqDepth = 63;
  static constexpr uint32_t kLeanInline = 64;
  uint32_t rq_depth_ = 128;
  uint32_t max_inline_ = 256;
  IdlePoll<> idle_;         // when to look at the rdma_cm channel and the device's events
  uint32_t in_setup_ = 0;   // connections between create_conn and established or closed
  uint32_t unsettled_ = 0;  // closed or gone connections not reaped yet
  std::string device_why_;  // what ended the device (device_failed); empty while it lives
  bool cq_armed_ = false;   // a completion will raise an event on the completion channel
  bool cm_kick_ = false;    // wait() saw the rdma_cm channel readable: read it next progress
  // What the next progress takes of the device's asynchronous events: nothing; what
  // other contexts on the device read for this one (due once a tick); or that and the
  // device's event descriptor, which a look or wait() saw readable.
  enum class DeviceEvents : uint8_t { None, Inbox, Readable };
  DeviceEvents device_events_ = DeviceEvents::None;
  void want_device_events(DeviceEvents e) { device_events_ = std::max(device_events_, e); }
  bool shared_low_ = false;  // the shared receive queue's limit event came
  bool async_subscribed_ = false;
  bool port_event_awaited_ = false;  // a wait for a down port's event ran (until it is up)
  std::vector<AsyncEvent> async_inbox_;

  std::vector<std::unique_ptr<Conn>> conns_;
  std::unordered_map<uint32_t, Conn*> by_qp_num_;  // for shared receives
  SlotPool shared_slots_;
  ConnRequest incoming_;
  Ring<CmOutcome> pending_{8};
};

template <class Sink>
void Fabric::deliver(Sink& sink, CmOutcome& o) {
  switch (o.kind) {
    case CmOutcome::ConnectRequest:
      sink.on_connect_request(&incoming_, o.pdata, o.pdata_len);
      finish_request();
      break;
    case CmOutcome::Established:
      sink.on_established(o.user, o.attrs, o.pdata_len ? o.pdata : nullptr, o.pdata_len);
      break;
    case CmOutcome::Rejected: sink.on_rejected(o.user, o.pdata, o.pdata_len, o.why.c_str()); break;
    case CmOutcome::ConnError: sink.on_conn_error(o.user, o.failure, o.why.c_str()); break;
  }
}

template <class Sink>
void Fabric::complete(Sink& sink, const ibv_wc* batch, int i, int n) {
  const ibv_wc& wc = batch[i];
  Slot* s = reinterpret_cast<Slot*>(wc.wr_id);
  Conn* c = s->conn;
  Slot::Op op = s->op;
  uint64_t wr = s->wr;
  if (op == Slot::SharedRecv) {
    shared_slots_.give(s);
    auto it = by_qp_num_.find(wc.qp_num);
    if (it == by_qp_num_.end()) return;  // a queue pair already destroyed
    c = it->second;
  } else {
    c->slots.give(s);
    if (op == Slot::Drain) return;  // bookkeeping of a queue pair already in error
  }
  if (wc.status == IBV_WC_SUCCESS) {
    switch (op) {
      case Slot::Recv:
      case Slot::SharedRecv: sink.on_recv(c->user, wr, wc.byte_len); break;
      case Slot::Send: sink.on_send_done(c->user, wr); break;
      case Slot::Read: sink.on_read_done(c->user, wr); break;
      case Slot::Drain: break;
    }
    return;
  }
  // A device event (a port gone down, a queue pair failed) may be what this error is
  // the effect of; read it, so that the cause is named, not the effect.
  if (!c->remote_gone && !c->wr_failed) [[unlikely]]
    take_async_events_after_error(c, wc.status);
  // The error behind the flushes, polled after the connection was already reported
  // failed (the flush came in an earlier batch): the report could not name it, the log
  // does.
  if (c->wr_failed && !c->cause_seen && !c->remote_gone && wc.status != IBV_WC_WR_FLUSH_ERR)
      [[unlikely]]
    RDMX_LOG(LogLevel::Error, rank_,
             "verbs: QP %u with %s: %s (vendor error 0x%x) on %s, after the connection was "
             "reported failed (%s)",
             wc.qp_num, c->peer.c_str(), ibv_wc_status_str(wc.status), wc.vendor_err,
             Slot::name(op), c->why);
  const ibv_wc* cause = &wc;
  if (wc.status == IBV_WC_WR_FLUSH_ERR && !c->remote_gone && !c->wr_failed)
    for (int j = i + 1; j < n; ++j)
      if (batch[j].qp_num == wc.qp_num && batch[j].status != IBV_WC_SUCCESS &&
          batch[j].status != IBV_WC_WR_FLUSH_ERR) {
        cause = &batch[j];
        break;
      }
  c->wr_failed = true;
  c->cause_seen |= wc.status != IBV_WC_WR_FLUSH_ERR || cause != &wc;
  fabric::Failure f = c->remote_gone ? c->gone_failure : failure_of(cause->status);
  fill_why(c, f, cause == &wc ? op : reinterpret_cast<Slot*>(cause->wr_id)->op, *cause);
  RDMX_LOG(LogLevel::Debug, rank_, "verbs: QP %u: %s", wc.qp_num, c->why);
  sink.on_wr_error(c->user, wr, f, c->why);
}

template <class Sink>
int Fabric::progress(Sink& sink) {
  int handled = 0;
  // Connection events first: a passive connection is reported established before any
  // of its completions, and a peer's disconnect only after what it sent has arrived.
  // Reading either channel is a system call: with no connection being set up, both are
  // looked at with one poll() once a tick of the coarse clock (1 to 4 ms), and read only
  // when that (or wait()) saw them readable, so that a busy loop makes no system call
  // per message and one per tick.
  if (idle_.due()) [[unlikely]] {
    look_at_channels();
    want_device_events(DeviceEvents::Inbox);
  }
  if (!pending_.empty() || in_setup_ || cm_kick_) {
    cm_kick_ = false;
    CmOutcome o;
    while (next_outcome(o)) {
      ++handled;
      deliver(sink, o);
    }
  }
  constexpr int kBatch = 32;
  ibv_wc wc[kBatch];
  int n = ibv_poll_cq(dev_.cq(), kBatch, wc);
  if (n < 0) return RDMX_ERR_FABRIC;
  for (int i = 0; i < n; ++i) complete(sink, wc, i, n);
  handled += n;
  // The device's own events, when a look or wait() saw one; once a tick, those another
  // context on the same device read for this one.
  if (device_events_ != DeviceEvents::None) [[unlikely]] {
    take_async_events(device_events_ == DeviceEvents::Readable);
    if (shared_low_) {
      shared_low_ = false;
      if constexpr (requires { sink.on_shared_receive_low(); }) sink.on_shared_receive_low();
    }
  }
  if (unsettled_) {
    housekeeping(n < kBatch);
    CmOutcome o;
    while (!pending_.empty()) {
      o = pending_.pop();
      ++handled;
      deliver(sink, o);
    }
  }
  return handled;
}

}  // namespace rdmx::verbs
