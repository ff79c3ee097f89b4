// The mid-size protocol: a message above the eager limit and up to the link's mid-size
// limit goes as a run of Segment messages, each one eager-limit piece through the
// peer's receive buffers, instead of by rendezvous. Where a READ is emulated in
// software (libfabric tcp) the rendezvous costs a round trip or more before the first
// byte moves; segments cost one extra copy at the receiving end (and at the sending end,
// unless the link sends in place: post_bounce) and no round trip at all.
//
// The sender puts a message's segments on the link back to back (it holds the head of
// its backlog until the last one is posted), so a link carries at most one message in
// segments at a time and every segment after the first continues it. The receiver
// matches on the first segment: into the receive it finds, copied in place, or into an
// unexpected record that joins the unexpected queue once the message is whole (a
// receive posted meanwhile takes it then). Memory: segments use the same receive
// buffers and credits as eager messages, so a link holds no more than before; an
// unexpected mid-size message holds its length until it is received, as an eager one
// does.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/copy.h"
#include "engine/engine.h"

namespace rdmx::engine {

// Whether r, not yet on the wire, goes in segments on link l rather than by rendezvous.
template <fabric::Fabric F>
inline bool Engine<F>::goes_in_segments(const Link<F>& l, const Req& r) {
  return !r.sync && r.len > l.eager_limit && r.len <= l.midsize_limit;
}

// This side's mid-size limit for a new connection, in whole KiB as the connect message
// carries it: the setting, or the fabric's choice for that connection.
template <fabric::Fabric F>
uint64_t Engine<F>::own_midsize_limit(const Link<F>& l) const {
  int64_t v = settings_.midsize_limit;
  uint64_t limit = 0;
  if (v >= 0) {
    limit = uint64_t(v);
  } else if constexpr (requires { fabric_.midsize_limit(l.conn); }) {
    limit = fabric_.midsize_limit(l.conn);
  }
  return limit / 1024 * 1024;
}

// Posts as many of r's segments as the link allows now; true once the last is posted
// (r is then complete), false if r must wait (it stays at the head of the backlog).
template <fabric::Fabric F>
bool Engine<F>::transmit_segments(Peer<F>& p, Req& r) {
  Link<F>& l = *p.link;
  const auto* data = static_cast<const uint8_t*>(r.buf);
  if (r.sent == 0) ++stats_.segmented_sends;
  while (r.sent < r.len) {
    if (!can_send(l)) return false;
    wire::Header h = header(wire::Type::Segment, r.cid, r.tag, r.len);
    uint64_t n = std::min(l.eager_limit, r.len - r.sent);
    if (!post(l, h, nullptr, 0, data + r.sent, n, false, &r, r.sent + n == r.len)) return false;
    r.sent += n;
  }
  r.queue_node.unlink();
  if (r.state != Req::State::WaitSent) complete(r);
  return true;
}

// One segment: the first starts a message (matched now), the others continue it.
template <fabric::Fabric F>
void Engine<F>::handle_segment(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len) {
  Reassembly<F>& a = l.reassembly;
  uint64_t n = len - sizeof h;
  if (!a.active()) {
    if (h.length <= l.eager_limit || h.length > l.midsize_limit)
      return bad_segment(l, h.length,
                         "a length outside this link's mid-size range " +
                             std::to_string(l.eager_limit + 1) + ".." +
                             std::to_string(l.midsize_limit));
    start_segments(l, h);
  } else if (h.length != a.total || h.context_id != a.cid || h.tag != a.tag) {
    return bad_segment(l, h.length, "another message's segments still arriving");
  }
  if (n == 0 || n > a.total - a.arrived || n > l.eager_limit)
    return bad_segment(l, h.length,
                       std::to_string(n) + " bytes after " + std::to_string(a.arrived));
  if (a.recv) {
    Req& r = *a.recv;
    if (a.arrived < r.len)
      copy_bytes(static_cast<uint8_t*>(r.buf) + a.arrived, b + sizeof h,
                 std::min(n, r.len - a.arrived));
  } else {
    std::memcpy(a.unexp->payload.data + a.arrived, b + sizeof h, n);
  }
  a.arrived += n;
  if (a.arrived == a.total) finish_segments(l);
}

template <fabric::Fabric F>
void Engine<F>::start_segments(Link<F>& l, const wire::Header& h) {
  Reassembly<F>& a = l.reassembly;
  Peer<F>& p = *l.peer;
  a.total = h.length;
  a.arrived = 0;
  a.cid = h.context_id;
  a.tag = h.tag;
  if (Req* r = static_cast<Req*>(posted_.match(h.context_id, p.rank, h.tag))) {
    r->state = Req::State::Assembling;  // matched: its status is set here, failure or not
    r->peer = p.rank;
    uint64_t got = std::min(r->len, h.length);
    r->status = {
        p.rank,      h.tag, got, h.length, h.length > r->len ? RDMX_ERR_TRUNCATED : RDMX_OK,
        h.context_id};
    r->peer_node.owner = r;
    r->peer_node.push_back(p.inflight);  // failed with the peer
    a.recv = r;
    return;
  }
  Unexp& u = new_unexpected(h.length, &l);
  u.payload = payloads_.get(h.length);
  a.unexp = &u;
}

template <fabric::Fabric F>
void Engine<F>::finish_segments(Link<F>& l) {
  Reassembly<F> a = l.reassembly;
  l.reassembly = {};
  if (a.recv) {
    a.recv->peer_node.unlink();
    complete(*a.recv);
    return;
  }
  // Whole: a receive posted while it arrived takes it now, else it is unexpected.
  Unexp& u = *a.unexp;
  int32_t src = l.peer->rank;
  if (Req* r = static_cast<Req*>(posted_.match(a.cid, src, a.tag))) {
    deliver(*r, src, a.cid, a.tag, u.payload.data, u.length);
    payloads_.put(u.payload);
    unexpected_pool_.put(&u);
    return;
  }
  ++stats_.unexpected;
  unexpected_.add(u, a.cid, src, a.tag);
  hold_unexpected(l, u.length);
}

// Drops a message left half-arrived on a link that failed (its receive, if it had one,
// fails with the peer).
template <fabric::Fabric F>
void Engine<F>::drop_segments(Link<F>& l) {
  Reassembly<F>& a = l.reassembly;
  if (a.unexp) {
    payloads_.put(a.unexp->payload);
    unexpected_pool_.put(a.unexp);
  }
  a = {};
}

template <fabric::Fabric F>
void Engine<F>::bad_segment(Link<F>& l, uint64_t length, const std::string& what) {
  fail_link(l, RDMX_ERR_PROTOCOL,
            "rank " + std::to_string(l.peer->rank) + " sent a segment of a " +
                std::to_string(length) + "-byte message with " + what);
}

}  // namespace rdmx::engine
