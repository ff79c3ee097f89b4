// The rendezvous receiver: pull the message with RDMA READs in chunks, never more in
// flight on a connection than its negotiated initiator depth, then send FIN.
#pragma once

#include <algorithm>

#include "engine/engine.h"

namespace rdmx::engine {

template <fabric::Fabric F>
void Engine<F>::start_read(Req& r, Link<F>* l, int32_t source, uint32_t cid, int32_t tag,
                           uint64_t msg_len, const RemoteData& remote) {
  r.state = Req::State::Reading;  // matched: its status is set here, failure or not
  r.peer = source;
  r.remote = remote;
  r.link = l;
  r.read_len = std::min(r.len, msg_len);
  r.read_posted = 0;
  r.reads_in_flight = 0;
  r.status = {source, tag, r.read_len, msg_len, msg_len > r.len ? RDMX_ERR_TRUNCATED : RDMX_OK,
              cid};
  Peer<F>& p = *l->peer;
  // The READs wait while the link is not open: on the passive side, the active side's
  // messages may come before the connection's established event; on a link this side
  // proposed to close, the peer, whose send waits for them, refuses (engine_close.h).
  if (l->state.closed()) {
    fail_request(r, p.failed ? p.failure_code : RDMX_ERR_PEER_LOST);
    return;
  }
  if (r.read_len == 0) {
    queue_control(p, wire::Type::Fin, remote.sender_request);
    complete(r);
    return;
  }
  std::string err;
  if (int rc = register_buffer(r, r.read_len, fabric::kLocalWrite, err)) {
    error(rc,
          "registering a " + std::to_string(r.read_len) + "-byte receive buffer failed: " + err);
    queue_control(p, wire::Type::Fin, remote.sender_request);  // release the sender anyway
    fail_request(r, rc);
    return;
  }
  r.peer_node.owner = &r;
  r.peer_node.push_back(p.inflight);
  r.queue_node.owner = &r;
  r.queue_node.push_back(l->read_queue);
  schedule_reads(*l);
}

// RDMX_RNDV_CHUNK, with as many READs in flight as negotiated, or (-1) the fabric's
// choice of both, and of the pieces of a message read alone.
template <fabric::Fabric F>
void Engine<F>::choose_reads(Link<F>& l) const {
  uint64_t chunk = fabric::kDefaultRndvChunk;
  uint32_t depth = l.attrs.initiator_depth;
  if (settings_.rndv_chunk > 0) {
    chunk = uint64_t(settings_.rndv_chunk);
  } else {
    if constexpr (requires { fabric_.rndv_chunk(l.conn); }) chunk = fabric_.rndv_chunk(l.conn);
    if constexpr (requires { fabric_.max_reads(l.conn); })
      depth = std::min(depth, fabric_.max_reads(l.conn));
  }
  l.read_chunk = std::max<uint64_t>(1, std::min(chunk, l.attrs.max_msg_size));
  l.lone_read_chunk = l.read_chunk;
  if constexpr (requires { fabric_.lone_rndv_chunk(l.conn); }) {
    if (settings_.rndv_chunk < 0)
      l.lone_read_chunk =
          std::max<uint64_t>(1, std::min(l.read_chunk, fabric_.lone_rndv_chunk(l.conn)));
  }
  l.read_pacer.reset(depth, l.attrs.retransmit_ns());
}

template <fabric::Fabric F>
void Engine<F>::schedule_reads(Link<F>& l) {
  while (!l.read_queue.empty() && l.reads_outstanding < l.read_pacer.window() && l.sq.has_room() &&
         l.state.open()) {
    Req& r = *static_cast<Req*>(l.read_queue.first->owner);
    // At its first READ: a message with the link's READs to itself is read in the pieces
    // the fabric suggests for a lone one, one behind others in whole chunks. Chosen here,
    // not when it matched: a passive side can match the active side's RTS before its
    // established event, when the link's sizes are not chosen yet.
    if (r.read_posted == 0)
      r.read_chunk = l.reads_outstanding == 0 ? l.lone_read_chunk : l.read_chunk;
    uint64_t chunk = std::min(r.read_chunk, r.read_len - r.read_posted);
    auto* dst = static_cast<uint8_t*>(r.buf) + r.read_posted;
    int rc = fabric_.read(l.conn, dst, chunk, r.reg->region, r.remote.address + r.read_posted,
                          r.remote.key, wr_id(kWrRead, ObjectPool<Req>::id_of(&r)));
    if (rc == RDMX_ERR_AGAIN) return;  // the fabric is full: retried on a completion
    if (rc) {
      fail_link(l, rc,
                "posting an RDMA READ from rank " + std::to_string(l.peer->rank) + " failed");
      return;
    }
    r.read_posted += chunk;
    ++r.reads_in_flight;
    l.read_pacer.posted();
    l.sq.take();
    ++stats_.rdma_reads;
    if (++l.reads_outstanding > stats_.max_reads_outstanding)
      stats_.max_reads_outstanding = l.reads_outstanding;
    if (r.read_posted == r.read_len) r.queue_node.unlink();
  }
}

template <fabric::Fabric F>
void Engine<F>::on_read_done(void* user, uint64_t wr) {
  auto* l = static_cast<Link<F>*>(user);
  l->sq.release();
  --l->reads_outstanding;
  if (l->read_pacer.completed()) [[unlikely]]
    ++stats_.read_backoffs;
  Req* r = requests_.find(wr_value(wr));
  if (r && r->state == Req::State::Reading && --r->reads_in_flight == 0 &&
      r->read_posted == r->read_len)
    finish_read(*r);
  if (l->state.open()) {
    schedule_reads(*l);
    pump(*l->peer);
  }
}

template <fabric::Fabric F>
void Engine<F>::finish_read(Req& r) {
  r.peer_node.unlink();
  unregister(r);
  queue_control(*r.link->peer, wire::Type::Fin, r.remote.sender_request);
  complete(r);
}

template <fabric::Fabric F>
int Engine<F>::register_buffer(Req& r, uint64_t len, uint32_t access, std::string& err) {
  int rc = RDMX_OK;
  r.reg = rcache_.acquire(r.buf, len, access, rc, err);
  return rc;
}

}  // namespace rdmx::engine
