// Every rdma_cm event of the verbs backend: read from the non-blocking event channel,
// its private data copied before the event is acknowledged, then turned into the
// connection's next step or an outcome for the engine.
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

}  // namespace

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
  if (!device_why_.empty()) {
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
    CmMessage r = protocol::make_cm(CmKind::Reject, rank_, m.src_rank);
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
    CmMessage r = protocol::make_cm(CmKind::Reject, rank_, m.src_rank);
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
      peer_gone(c, Failure::Disconnected, "the peer at " + c->peer + " disconnected");
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
