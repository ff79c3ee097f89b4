// Connection management of the verbs backend: rdma_connect / rdma_accept /
// rdma_reject with every rdma_conn_param field, and the end of a connection (closing,
// failing, the peer going away, reaping what is left). Queue pairs are set up in
// verbs_qp.cpp, rdma_cm events handled in verbs_events.cpp.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.h"
#include "fabric/verbs/verbs_fabric.h"

namespace rdmx::verbs {
namespace {

const sockaddr* as_sockaddr(const sockaddr_storage& ss) {
  return reinterpret_cast<const sockaddr*>(&ss);
}

}  // namespace

int Fabric::create_conn(const uint8_t* addr, size_t addr_len, ConnRequest* req, void* user,
                        Conn** out, std::string& err) {
  if (!device_why_.empty()) {
    err = "no new connection: " + device_why_;
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

void Fabric::device_removed() { device_failed("the RDMA device " + dev_.name() + " was removed"); }

void Fabric::device_failed(const std::string& why) {
  device_why_ = why;
  for (auto& c : conns_) fail(c.get(), CmOutcome::ConnError, fabric::Failure::DeviceRemoved, why);
}

void Fabric::reap(Conn* c) {
  if (c->qp) {
    // by_qp_num_ keeps naming this connection: a shared receive it consumed may still
    // complete, and its buffer must go back to the engine (the shell lives on).
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

void Fabric::release(Conn* c) {
  // The device may have given the number to a newer queue pair already.
  if (auto it = by_qp_num_.find(c->qpn); it != by_qp_num_.end() && it->second == c)
    by_qp_num_.erase(it);
  std::erase_if(conns_, [c](auto& p) { return p.get() == c; });
}

// A connection the peer ended is reported once what it sent has been delivered: its own
// work requests are all back (flushed), and the completion queue, which held its last
// messages ahead of the disconnect, has been polled empty since. (Receives from a shared
// queue hold no slot of the connection: only the empty queue says they are all in.)
void Fabric::housekeeping(bool cq_drained) {
  for (auto& p : conns_) {
    Conn* c = p.get();
    if (!c->unsettled) continue;
    if (c->remote_gone && c->state != Conn::State::Closed && c->slots.in_use() == 0 && cq_drained)
      fail(c, CmOutcome::ConnError, c->gone_failure, c->gone_why);
    if (c->state == Conn::State::Closed && c->slots.in_use() == 0 && !c->dreq_deferred) reap(c);
  }
}

}  // namespace rdmx::verbs
