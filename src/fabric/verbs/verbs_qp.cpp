// The queue pairs rdmx creates for its connections: created on the context's own
// protection domain against the device's shared completion queue (and shared receive
// queue), moved INIT -> RTR -> RTS with the attributes rdma_cm computes, the read
// depths set to the negotiated values, and moved to ERROR to flush them.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabric/verbs/verbs_fabric.h"

namespace rdmx::verbs {
namespace {

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
  ia.sq_sig_all = 0;  // the engine signals one inline send in a few (fabric.h)
  ibv_qp* qp = nullptr;
  // A rank's first fabric::kRoomyConns queue pairs get the deep send queue and a generous inline
  // size; later ones, of a rank that talks to many peers, a lean queue (its sends wait
  // in the engine's backlog past it). The device keeps the queue's memory per queue pair
  // (on rxe 512 bytes a slot with 256 bytes of inline data, 256 with 64), whatever the
  // traffic: with the receive pool shared, it was most of what a peer cost.
  bool roomy = conns_.size() < fabric::kRoomyConns;
  uint32_t depth = roomy ? sq_depth_ : std::min(sq_depth_, kLeanSqDepth);
  uint32_t first_inline = roomy ? max_inline_ : std::min(max_inline_, kLeanInline);
  // Ask for a generous inline size and settle for what the device grants.
  for (uint32_t inl : {first_inline, std::min(first_inline, 64u), 0u}) {
    ia.cap = {};
    ia.cap.max_send_wr = depth;
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
  c->qpn = qp->qp_num;
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
    c->attrs.ack_timeout = a.timeout;
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

// Moves c's queue pair to the error state: every posted work request comes back
// flushed. Unsignaled sends come back too, pointing at no slot of their own; when some
// were posted after the last signaled one, a signaled empty send is posted behind them
// (a send queue completes in order), and the connection is reaped only once it is back:
// no completion can then name a connection that is gone.
void Fabric::to_error(Conn* c) {
  if (!c->qp) return;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(c->qp.get(), &a, IBV_QP_STATE);
  if (c->unsignaled_tail == 0) return;
  Slot* s = c->slots.drain();
  if (!s) return;  // one is already on its way
  ibv_send_wr w{};
  w.wr_id = reinterpret_cast<uintptr_t>(s);
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(c->qp.get(), &w, &bad)) {
    c->slots.give(s);
    RDMX_LOG(LogLevel::Warn, rank_, "verbs: posting the drain of QP %u with %s: %s", c->qp->qp_num,
             c->peer.c_str(), std::strerror(e));
    return;
  }
  c->unsignaled_tail = 0;
}

}  // namespace rdmx::verbs
