// Connection management of the verbs backend: creating a connection's queue pair,
// rdma_connect / rdma_accept / rdma_reject with every rdma_conn_param field, the queue
// pair's INIT/RTR/RTS transitions, every rdma_cm event, and teardown.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.h"
#include "fabric/verbs/verbs_fabric.h"
#include "protocol/connect_msg.h"

namespace rdmx::verbs {
namespace {

using protocol::CmKind;
using protocol::CmMessage;

// IB CM reject reasons (IBTA 12.6.7.2) that rdma_cm reports in a REJECTED event.
constexpr int kRejInvalidServiceId = 8;  // nobody listens on that port
constexpr int kRejConsumerDefined = 28;  // rdma_reject by the peer

const sockaddr* as_sockaddr(const sockaddr_storage& ss) {
  return reinterpret_cast<const sockaddr*>(&ss);
}

std::string errno_text(int e) { return std::strerror(e < 0 ? -e : e); }

// The rdmx message in private data, if the bytes hold one (the engine validates the
// rest; the backend only needs the QP number and, to answer, the ranks and job key).
bool rdmx_message(const uint8_t* p, uint32_t len, CmMessage& m) {
  if (len < sizeof m) return false;
  std::memcpy(&m, p, sizeof m);
  return m.magic == protocol::kCmMagic && m.version == protocol::kCmVersion && m.length == sizeof m;
}

bool all_zero(const uint8_t* p, uint32_t len) {
  return std::all_of(p, p + len, [](uint8_t b) { return b == 0; });
}

const char* state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    default: return "?";
  }
}

}  // namespace

bool Fabric::create_qp(Conn* c, std::string& err) {
  const DeviceLimits& lim = dev_.limits();
  ibv_qp_init_attr ia{};
  ia.send_cq = dev_.cq();
  ia.recv_cq = dev_.cq();
  ia.srq = dev_.srq();
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  ibv_qp* qp = nullptr;
  // Ask for a generous inline size and settle for what the device grants.
  for (uint32_t inl : {max_inline_, 64u, 0u}) {
    ia.cap = {};
    ia.cap.max_send_wr = sq_depth_;
    ia.cap.max_recv_wr = use_srq_ ? 0 : rq_depth_;
    ia.cap.max_send_sge = std::min(3u, lim.max_sge);
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = inl;
    qp = ibv_create_qp(dev_.pd(), &ia);
    if (qp) break;
  }
  if (!qp) {
    err = "ibv_create_qp on " + dev_.name() + " failed: " + errno_text(errno);
    return false;
  }
  c->qp.reset(qp);
  uint32_t entries = ia.cap.max_send_wr + (use_srq_ ? 0 : ia.cap.max_recv_wr);
  if (!dev_.reserve_cq(entries, err)) {
    c->qp.reset();
    return false;
  }
  c->cq_entries = entries;
  c->slots.init(entries, c);
  c->attrs.max_inline = ia.cap.max_inline_data;
  c->attrs.max_send_wr = ia.cap.max_send_wr;
  c->attrs.max_sge = ia.cap.max_send_sge;
  if (use_srq_) by_qp_num_[qp->qp_num] = c;

  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  if (rdma_init_qp_attr(c->id.get(), &a, &mask)) {
    // An active id is only bound here; its port is all rdma_cm would tell.
    a = {};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = c->id->port_num;
    a.pkey_index = 0;
    mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  }
  a.qp_access_flags = IBV_ACCESS_REMOTE_READ;  // the peer reads rendezvous payloads
  mask |= IBV_QP_ACCESS_FLAGS;
  if (ibv_modify_qp(qp, &a, mask)) {
    err = "moving a new queue pair to INIT failed: " + errno_text(errno);
    by_qp_num_.erase(qp->qp_num);
    dev_.release_cq(entries);
    c->cq_entries = 0;
    c->qp.reset();
    return false;
  }
  return true;
}

bool Fabric::move_qp(Conn* c, ibv_qp_state to, uint32_t rd_atomic, std::string& err) {
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = to;
  if (rdma_init_qp_attr(c->id.get(), &a, &mask)) {
    err = std::string("rdma_init_qp_attr for ") + state_name(to) + ": " + errno_text(errno);
    return false;
  }
  // As librdmacm does: these mask bits are RoCE-only and confuse IB kernels.
  if (to == IBV_QPS_RTR && dev_.limits().link_layer == IBV_LINK_LAYER_INFINIBAND) mask &= ~0xe00000;
  if (to == IBV_QPS_RTR) a.max_dest_rd_atomic = uint8_t(rd_atomic);
  if (to == IBV_QPS_RTS) a.max_rd_atomic = uint8_t(rd_atomic);
  if (ibv_modify_qp(c->qp.get(), &a, mask)) {
    err =
        std::string("moving the queue pair to ") + state_name(to) + " failed: " + errno_text(errno);
    return false;
  }
  if (to == IBV_QPS_RTS) {
    c->attrs.retry_count = a.retry_cnt;
    c->attrs.rnr_retry = a.rnr_retry;
  }
  return true;
}

fabric::ConnAttrs Fabric::attrs_of(const Conn* c, uint32_t initiator, uint32_t responder,
                                   bool peer_flow_control) const {
  fabric::ConnAttrs a = c->attrs;
  a.initiator_depth = initiator;
  a.responder_resources = responder;
  a.max_msg_size = dev_.limits().max_msg_size;
  a.flow_control = peer_flow_control;
  a.srq = use_srq_;
  return a;
}

int Fabric::create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user,
                        Conn** out, std::string& err) {
  if (device_dead_) {
    err = "the RDMA device " + dev_.name() + " was removed";
    return RDMX_ERR_NO_DEVICE;
  }
  auto c = std::make_unique<Conn>();
  c->user = user;
  c->active = req == nullptr;
  sockaddr_storage dst{};
  if (c->active) {
    WireAddress wa;
    if (!parse_address(addr, addr_len, wa, dst, err)) return RDMX_ERR_INVALID;
    c->peer = format_address(as_sockaddr(dst));
    // Ask for what both devices and RDMX_MAX_RD_ATOMIC allow; the peer may lower it.
    c->offer_initiator = std::min<uint32_t>(init_cap_, wa.max_qp_rd_atom);
    c->offer_responder = std::min<uint32_t>(resp_cap_, wa.max_qp_init_rd_atom);
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(dev_.channel(), &raw, c.get(), RDMA_PS_TCP)) {
      err = "rdma_create_id failed: " + errno_text(errno);
      return RDMX_ERR_FABRIC;
    }
    c->id.reset(raw);
    sockaddr_storage src{};
    std::memcpy(&src, dev_.local_address(), sizeof src);
    if (rdma_bind_addr(c->id.get(), reinterpret_cast<sockaddr*>(&src)) || !c->id->verbs) {
      err = "binding to " + format_address(dev_.local_address()) + " failed: " + errno_text(errno);
      return RDMX_ERR_FABRIC;
    }
  } else {
    if (!req || !req->id || req->conn) {
      err = "create_conn: the connection request was already taken";
      return RDMX_ERR_INVALID;
    }
    c->peer = req->peer;
    c->id = std::move(req->id);
    c->id->context = c.get();
    c->state = Conn::State::Connecting;
  }
  if (!create_qp(c.get(), err)) {
    if (!c->active) {
      c->id->context = nullptr;
      req->id = std::move(c->id);
    }
    return RDMX_ERR_NO_MEMORY;
  }
  if (c->active && rdma_resolve_addr(c->id.get(), nullptr, reinterpret_cast<sockaddr*>(&dst),
                                     resolve_timeout_ms_)) {
    err = "resolving " + c->peer + " failed at once: " + errno_text(errno);
    by_qp_num_.erase(c->qp->qp_num);
    dev_.release_cq(c->cq_entries);
    return RDMX_ERR_UNREACHABLE;
  }
  if (!c->active) req->conn = c.get();
  c->in_setup = true;
  ++in_setup_;
  *out = c.get();
  conns_.push_back(std::move(c));
  return RDMX_OK;
}

int Fabric::connect(Conn* c, const void* pdata, size_t plen, std::string& err) {
  if (plen > kConnectDataMax) {
    err = "connect private data of " + std::to_string(plen) + " bytes exceeds rdma_cm's " +
          std::to_string(kConnectDataMax) + "-byte limit for RDMA_PS_TCP";
    return RDMX_ERR_INVALID;
  }
  if (!c->active || c->state != Conn::State::Resolving || c->connect_wanted) {
    err = "connect() on a connection that is not a new outgoing one";
    return RDMX_ERR_INVALID;
  }
  if (plen) std::memcpy(c->pdata, pdata, plen);
  c->pdata_len = uint8_t(plen);
  c->connect_wanted = true;
  if (c->route_ready) start_connect(c);
  return RDMX_OK;
}

void Fabric::start_connect(Conn* c) {
  rdma_conn_param p{};
  p.private_data = c->pdata;
  p.private_data_len = c->pdata_len;
  p.initiator_depth = uint8_t(c->offer_initiator);
  p.responder_resources = uint8_t(c->offer_responder);
  p.flow_control = flow_control_;
  p.retry_count = retry_count_;
  p.rnr_retry_count = rnr_retry_;
  p.srq = use_srq_;
  p.qp_num = c->qp->qp_num;
  if (rdma_connect(c->id.get(), &p)) {
    fail(c, CmOutcome::ConnError, fabric::Failure::Unreachable,
         "rdma_connect to " + c->peer + " failed: " + errno_text(errno));
    return;
  }
  c->state = Conn::State::Connecting;
  RDMX_LOG(LogLevel::Debug, rank_,
           "verbs: connecting QP %u to %s, initiator depth %u, responder resources %u",
           c->qp->qp_num, c->peer.c_str(), c->offer_initiator, c->offer_responder);
}

int Fabric::accept(Conn* c, ConnRequest* req, const void* pdata, size_t plen, std::string& err) {
  if (plen > kAcceptDataMax) {
    err = "accept private data of " + std::to_string(plen) + " bytes exceeds rdma_cm's " +
          std::to_string(kAcceptDataMax) + "-byte limit";
    return RDMX_ERR_INVALID;
  }
  if (req->conn != c || c->state != Conn::State::Connecting) {
    err = "accept() of a connection that was not created for this request";
    return RDMX_ERR_INVALID;
  }
  // Lower the requester's proposal to what this side allows.
  uint32_t initiator = std::min(init_cap_, req->initiator_depth);
  uint32_t responder = std::min(resp_cap_, req->responder_resources);
  std::string why;
  if (!move_qp(c, IBV_QPS_RTR, responder, why) || !move_qp(c, IBV_QPS_RTS, initiator, why)) {
    err = "accepting " + c->peer + ": " + why;
    return RDMX_ERR_FABRIC;
  }
  rdma_conn_param p{};
  p.private_data = pdata;
  p.private_data_len = uint8_t(plen);
  p.initiator_depth = uint8_t(initiator);
  p.responder_resources = uint8_t(responder);
  p.flow_control = flow_control_;
  p.retry_count = retry_count_;
  p.rnr_retry_count = rnr_retry_;
  p.srq = use_srq_;
  p.qp_num = c->qp->qp_num;
  if (rdma_accept(c->id.get(), &p)) {
    err = "rdma_accept of " + c->peer + " failed: " + errno_text(errno);
    return RDMX_ERR_FABRIC;
  }
  req->answered = true;
  c->state = Conn::State::Open;
  c->attrs = attrs_of(c, initiator, responder, req->flow_control);
  // The queue pair is ready: the engine hears of it before any completion of its own,
  // and never sends first (the requester speaks first), so nothing is lost if the
  // CM's RTU arrives after the requester's first message.
  CmOutcome o;
  o.kind = CmOutcome::Established;
  o.user = c->user;
  o.attrs = c->attrs;
  pending_.push(std::move(o));
  return RDMX_OK;
}

void Fabric::reject(ConnRequest* req, const void* pdata, size_t plen) {
  plen = std::min(plen, kRejectDataMax);
  rdma_cm_id* id = req->conn ? req->conn->id.get() : req->id.get();
  if (id && rdma_reject(id, pdata, uint8_t(plen)))
    RDMX_LOG(LogLevel::Info, rank_, "verbs: rdma_reject of %s failed: %s", req->peer.c_str(),
             errno_text(errno).c_str());
  req->answered = true;
  if (req->conn)
    close(req->conn);
  else
    req->id.reset();
}

void Fabric::finish_request() {
  ConnRequest& r = incoming_;
  if (!r.answered && (r.id || r.conn)) {
    RDMX_LOG(LogLevel::Info, rank_, "verbs: the request from %s was not answered; rejecting it",
             r.peer.c_str());
    reject(&r, nullptr, 0);
  }
  r.id.reset();
  r.conn = nullptr;
  r.answered = false;
}

void Fabric::disconnect(Conn* c) {
  if (c && c->state != Conn::State::Closed) close(c);
}

void Fabric::to_error(Conn* c) {
  if (!c->qp) return;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(c->qp.get(), &a, IBV_QP_STATE);
}

void Fabric::settle_setup(Conn* c) {
  if (!c->in_setup) return;
  c->in_setup = false;
  --in_setup_;
}

void Fabric::mark_unsettled(Conn* c) {
  if (c->unsettled || c->reaped) return;
  c->unsettled = true;
  ++unsettled_;
}

// Ends a connection from this side: no more events reach the engine for it, the peer
// is told (DREQ), and every posted work request is flushed back.
void Fabric::close(Conn* c) {
  if (c->state == Conn::State::Closed) return;
  bool open = c->state == Conn::State::Open;
  c->state = Conn::State::Closed;
  if (open && !c->remote_gone && c->id) {
    if (c->active || c->confirmed) {
      rdma_disconnect(c->id.get());
    } else {
      c->dreq_deferred = true;  // the CM refuses a DREQ before the RTU has arrived
    }
  }
  settle_setup(c);
  to_error(c);
  mark_unsettled(c);
}

void Fabric::fail(Conn* c, CmOutcome::Kind kind, fabric::Failure f, std::string why,
                  const uint8_t* pdata, uint32_t plen) {
  if (c->state == Conn::State::Closed) return;
  RDMX_LOG(LogLevel::Debug, rank_, "verbs: connection with %s ends: %s", c->peer.c_str(),
           why.c_str());
  CmOutcome o;
  o.kind = kind;
  o.user = c->user;
  o.failure = f;
  o.why = std::move(why);
  o.pdata_len = std::min<uint32_t>(plen, sizeof o.pdata);
  if (o.pdata_len) std::memcpy(o.pdata, pdata, o.pdata_len);
  close(c);
  pending_.push(std::move(o));
}

// The peer ended an established connection. What it sent before has completed (or is
// in the completion queue, ahead of the flushes this starts); the engine hears of the
// end once the queue pair is drained.
void Fabric::peer_gone(Conn* c, fabric::Failure f, std::string why) {
  if (c->state == Conn::State::Closed || c->remote_gone) return;
  if (c->state != Conn::State::Open) {
    fail(c, CmOutcome::ConnError, f, std::move(why));
    return;
  }
  c->remote_gone = true;
  c->gone_failure = f;
  c->gone_why = std::move(why);
  settle_setup(c);
  to_error(c);
  mark_unsettled(c);
}

void Fabric::device_removed() {
  device_dead_ = true;
  for (auto& c : conns_)
    fail(c.get(), CmOutcome::ConnError, fabric::Failure::DeviceRemoved,
         "the RDMA device " + dev_.name() + " was removed");
}

void Fabric::reap(Conn* c) {
  if (c->qp) {
    by_qp_num_.erase(c->qp->qp_num);
    dev_.release_cq(c->cq_entries);
    c->cq_entries = 0;
    c->qp.reset();
  }
  c->id.reset();
  c->reaped = true;
  if (c->unsettled) {
    c->unsettled = false;
    --unsettled_;
  }
}

void Fabric::housekeeping() {
  for (auto& p : conns_) {
    Conn* c = p.get();
    if (!c->unsettled) continue;
    if (c->remote_gone && c->state != Conn::State::Closed && c->slots.in_use() == 0)
      fail(c, CmOutcome::ConnError, c->gone_failure, c->gone_why);
    if (c->state == Conn::State::Closed && c->slots.in_use() == 0 && !c->dreq_deferred) reap(c);
  }
}

bool Fabric::next_outcome(CmOutcome& out) {
  while (pending_.empty())
    if (!read_cm_event()) return false;
  out = pending_.pop();
  return true;
}

bool Fabric::read_cm_event() {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(dev_.channel(), &ev)) {
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      RDMX_LOG(LogLevel::Warn, rank_, "verbs: reading the rdma_cm event channel: %s",
               errno_text(errno).c_str());
    return false;
  }
  // Everything needed is copied out before the event is acknowledged.
  int type = ev->event;
  int status = ev->status;
  rdma_cm_id* id = ev->id;
  rdma_conn_param param{};
  uint8_t pdata[sizeof(CmOutcome::pdata)];
  uint32_t plen = 0;
  switch (type) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
    case RDMA_CM_EVENT_REJECTED:
      param = ev->param.conn;
      if (param.private_data) {
        plen = std::min<uint32_t>(param.private_data_len, sizeof pdata);
        std::memcpy(pdata, param.private_data, plen);
      }
      param.private_data = nullptr;
      break;
    default: break;
  }
  rdma_ack_cm_event(ev);
  RDMX_LOG(LogLevel::Debug, rank_, "verbs: rdma_cm event %s, status %d",
           rdma_event_str(rdma_cm_event_type(type)), status);
  if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
    on_connect_request(id, pdata, plen, param);
  } else if (id == dev_.listener()) {
    if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) device_removed();
  } else if (auto* c = static_cast<Conn*>(id->context)) {
    on_conn_event(c, type, status, pdata, plen, param);
  }
  return true;
}

void Fabric::on_connect_request(rdma_cm_id* raw, const uint8_t* pdata, uint32_t plen,
                                const rdma_conn_param& param) {
  CmId id(raw);
  id->context = nullptr;
  std::string peer = format_address(rdma_get_peer_addr(raw));
  if (device_dead_) {
    rdma_reject(raw, nullptr, 0);
    return;
  }
  CmMessage m;
  if (rdmx_message(pdata, plen, m) && m.qp_num != param.qp_num) {
    // The private data names another queue pair than the CM request: not a request
    // this side can trust. The engine never sees it.
    RDMX_LOG(LogLevel::Warn, rank_,
             "verbs: rejecting a request from %s: its private data names QP %u, the "
             "connection manager QP %u",
             peer.c_str(), m.qp_num, param.qp_num);
    CmMessage r = protocol::make_cm(CmKind::Reject, m.job_key, rank_, m.src_rank);
    r.reason = protocol::RejectReason::Corrupt;
    rdma_reject(raw, &r, sizeof r);
    return;
  }
  incoming_.id = std::move(id);
  incoming_.conn = nullptr;
  incoming_.answered = false;
  incoming_.initiator_depth = param.initiator_depth;
  incoming_.responder_resources = param.responder_resources;
  incoming_.qp_num = param.qp_num;
  incoming_.flow_control = param.flow_control;
  incoming_.srq = param.srq;
  incoming_.peer = std::move(peer);
  CmOutcome o;
  o.kind = CmOutcome::ConnectRequest;
  o.pdata_len = plen;
  std::memcpy(o.pdata, pdata, plen);
  pending_.push(std::move(o));
}

void Fabric::on_connect_response(Conn* c, const uint8_t* pdata, uint32_t plen,
                                 const rdma_conn_param& param) {
  if (c->state != Conn::State::Connecting) {
    if (c->state == Conn::State::Closed) rdma_reject(c->id.get(), nullptr, 0);
    return;
  }
  CmMessage m;
  if (rdmx_message(pdata, plen, m) && m.qp_num != param.qp_num) {
    CmMessage r = protocol::make_cm(CmKind::Reject, m.job_key, rank_, m.src_rank);
    r.reason = protocol::RejectReason::Corrupt;
    rdma_reject(c->id.get(), &r, sizeof r);
    fail(c, CmOutcome::ConnError, fabric::Failure::Other,
         c->peer + " accepted with QP " + std::to_string(m.qp_num) +
             " in its private data, but the connection manager reports QP " +
             std::to_string(param.qp_num));
    return;
  }
  // The final read depths are the ones in the response, as the peer lowered them.
  std::string why;
  if (!move_qp(c, IBV_QPS_RTR, param.responder_resources, why) ||
      !move_qp(c, IBV_QPS_RTS, param.initiator_depth, why)) {
    rdma_reject(c->id.get(), nullptr, 0);
    fail(c, CmOutcome::ConnError, fabric::Failure::Other,
         "setting up the queue pair for " + c->peer + " failed: " + why);
    return;
  }
  if (rdma_establish(c->id.get())) {
    fail(c, CmOutcome::ConnError, fabric::Failure::Other,
         "rdma_establish with " + c->peer + " failed: " + errno_text(errno));
    return;
  }
  c->state = Conn::State::Open;
  c->confirmed = true;
  settle_setup(c);
  c->attrs = attrs_of(c, param.initiator_depth, param.responder_resources, param.flow_control);
  CmOutcome o;
  o.kind = CmOutcome::Established;
  o.user = c->user;
  o.attrs = c->attrs;
  o.pdata_len = plen;
  std::memcpy(o.pdata, pdata, plen);
  pending_.push(std::move(o));
}

void Fabric::on_conn_event(Conn* c, int type, int status, const uint8_t* pdata, uint32_t plen,
                           const rdma_conn_param& param) {
  using fabric::Failure;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (c->state != Conn::State::Resolving) return;
      if (c->id->verbs != dev_.context()) {
        fail(c, CmOutcome::ConnError, Failure::Unreachable,
             c->peer + " is reached through device " + ibv_get_device_name(c->id->verbs->device) +
                 ", not " + dev_.name());
        return;
      }
      if (rdma_resolve_route(c->id.get(), resolve_timeout_ms_))
        fail(c, CmOutcome::ConnError, Failure::Unreachable,
             "resolving a route to " + c->peer + " failed: " + errno_text(errno));
      return;
    case RDMA_CM_EVENT_ADDR_ERROR:
      fail(c, CmOutcome::ConnError, Failure::Unreachable,
           "resolving the address " + c->peer + " failed (" + errno_text(status) + ")");
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      if (c->state != Conn::State::Resolving) return;
      c->route_ready = true;
      if (c->connect_wanted) start_connect(c);
      return;
    case RDMA_CM_EVENT_ROUTE_ERROR:
      fail(c, CmOutcome::ConnError, Failure::Unreachable,
           "resolving a route to " + c->peer + " failed (" + errno_text(status) + ")");
      return;
    case RDMA_CM_EVENT_CONNECT_RESPONSE: on_connect_response(c, pdata, plen, param); return;
    case RDMA_CM_EVENT_ESTABLISHED:
      c->confirmed = true;
      settle_setup(c);
      if (c->dreq_deferred) {
        c->dreq_deferred = false;
        rdma_disconnect(c->id.get());
      }
      return;
    case RDMA_CM_EVENT_REJECTED: {
      c->dreq_deferred = false;
      if (!c->active) {
        fail(c, CmOutcome::ConnError, Failure::Disconnected,
             c->peer + " gave up the connection it had asked for (reject reason " +
                 std::to_string(status) + ")");
        return;
      }
      CmMessage m;
      bool rdmx = rdmx_message(pdata, plen, m);
      if (status == kRejConsumerDefined && rdmx) {
        fail(c, CmOutcome::Rejected, Failure::Other, "rejected by " + c->peer, pdata, plen);
      } else if (status == kRejInvalidServiceId ||
                 (status == kRejConsumerDefined && all_zero(pdata, plen))) {
        fail(c, CmOutcome::ConnError, Failure::Unreachable,
             "nobody accepts connections at " + c->peer +
                 " (the connection manager rejected the request, reason " + std::to_string(status) +
                 ")");
      } else {
        fail(c, CmOutcome::Rejected, Failure::Other,
             "the connection manager at " + c->peer + " rejected the request (reason " +
                 std::to_string(status) + ")",
             pdata, plen);
      }
      return;
    }
    case RDMA_CM_EVENT_CONNECT_ERROR:
      c->dreq_deferred = false;
      fail(c, CmOutcome::ConnError, Failure::Unreachable,
           "connecting with " + c->peer + " failed (" + errno_text(status) + ")");
      return;
    case RDMA_CM_EVENT_UNREACHABLE:
      c->dreq_deferred = false;
      fail(c, CmOutcome::ConnError, Failure::Unreachable,
           c->peer + " did not answer the connection handshake (" + errno_text(status) + ")");
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
      c->dreq_deferred = false;
      peer_gone(c, Failure::Disconnected, c->peer + " disconnected");
      return;
    case RDMA_CM_EVENT_DEVICE_REMOVAL: device_removed(); return;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return;
    case RDMA_CM_EVENT_ADDR_CHANGE:
      RDMX_LOG(LogLevel::Warn, rank_, "verbs: the address of the connection with %s changed",
               c->peer.c_str());
      return;
    default: return;
  }
}

}  // namespace rdmx::verbs
