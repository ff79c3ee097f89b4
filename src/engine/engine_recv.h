// The receive side: arriving messages, matching against posted receives, the
// unexpected queue, probes, matched probes and cancel.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/copy.h"
#include "engine/engine.h"

namespace rdmx::engine {

template <fabric::Fabric F>
inline int Engine<F>::irecv(int32_t source, uint32_t cid, int32_t tag, void* buf, uint64_t len,
                            rdmx_completion_fn cb, void* user, Req** out) {
  return recv<false>(source, cid, tag, 0, buf, len, cb, user, out);
}

template <fabric::Fabric F>
int Engine<F>::irecv_tagged(int32_t source, uint64_t tag, uint64_t ignore, void* buf, uint64_t len,
                            rdmx_completion_fn cb, void* user, Req** out) {
  auto [cid, t] = split_tag(tag);
  return recv<true>(source, cid, t, ignore, buf, len, cb, user, out);
}

// A receive (kTagged: of rdmx_irecv_tagged, under the mask ignore): the oldest
// unexpected message it matches, or posted.
template <fabric::Fabric F>
template <bool kTagged>
inline int Engine<F>::recv(int32_t source, uint32_t cid, int32_t tag, uint64_t ignore, void* buf,
                           uint64_t len, rdmx_completion_fn cb, void* user, Req** out) {
  auto key = [&] {
    return kTagged ? MatchKey::for_tagged(cid, source, tag, ignore)
                   : MatchKey::for_receive(cid, source, tag);
  };
  if ((uint32_t(source) >= uint32_t(size_) && source != RDMX_ANY_SOURCE) ||
      null_with_length(buf, len)) [[unlikely]]
    return recv_arg_error(source, buf, len);
  Req& r = new_request(Req::Kind::Recv, cb, user, buf, len, source, cid, tag);
  *out = &r;
  if (unexpected_.size() | failed_peers_) [[unlikely]] {  // one test for both
    if (auto* u =
            unexpected_.size() ? static_cast<Unexp*>(unexpected_.find(key(), ignore)) : nullptr) {
      unexpected_.remove(*u);
      consume(r, *u);
      return RDMX_OK;
    }
    // A receive from a failed peer fails now; one posted before the failure is failed
    // by fail_peer, which finds it in the posted queue.
    if (source != RDMX_ANY_SOURCE && peers_[size_t(source)].failed) {
      fail_request(r, peers_[size_t(source)].failure_code);
      return RDMX_OK;
    }
  }
  r.state = Req::State::Posted;
  if (kTagged && ignore)
    posted_.post_masked(r, key(), ignore);
  else
    posted_.post(r, key());
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::recv_arg_error(int32_t source, const void* buf, uint64_t len) {
  if (source != RDMX_ANY_SOURCE && (source < 0 || source >= size_))
    return error(RDMX_ERR_INVALID, "irecv: source rank " + std::to_string(source) +
                                       " is outside 0.." + std::to_string(size_ - 1) +
                                       " and not RDMX_ANY_SOURCE");
  (void)buf;
  return error(RDMX_ERR_INVALID, "irecv: a null buffer with length " + std::to_string(len));
}

template <fabric::Fabric F>
inline void Engine<F>::on_recv(void* user, uint64_t wr, uint32_t len) {
  auto* l = static_cast<Link<F>*>(user);
  if (!l->state.ready() || wr_kind(wr) != kWrRecv) [[unlikely]] {
    on_recv_other(*l, wr, len);
    return;
  }
  uint8_t* b = l->recv_buf(wr_value(wr));
  bool ctrl = handle_message(*l, b, len);
  repost(*l, b, wr, ctrl);
  pump(*l->peer);  // credits may have come with the message
}

// A message that took no receive buffer: the fabric carried it in its own queue entry
// (shared memory's small messages). It took a credit all the same, owed back at once,
// unless the fabric paces such messages itself (ConnAttrs::uncredited_max).
template <fabric::Fabric F>
inline void Engine<F>::on_recv_unbuffered(void* user, const uint8_t* msg, uint32_t len) {
  auto* l = static_cast<Link<F>*>(user);
  if (!l->state.ready()) [[unlikely]] {
    on_recv_unbuffered_other(*l, msg, len);
    return;
  }
  ++stats_.unbuffered_recvs;
  owe_unbuffered(*l, handle_message(*l, msg, len));
  pump(*l->peer);
}

// Whether a link that is not ready takes a message. Over rdma_cm the active side's
// first message can reach the passive side before its ESTABLISHED event: take it;
// replies wait for the event (the link is not Open yet).
// A link this side proposed to close takes messages too: the peer's answer, or what it
// sent before it saw the proposal (engine_close.h).
template <fabric::Fabric F>
bool Engine<F>::takes_messages(const Link<F>& l) {
  return l.state.open() || l.state.closing() || (l.state.connecting() && !l.active);
}

// A message on a link that is not ready (not open, or the passive side before the
// active side's first message), or in a buffer of the shared receive pool.
template <fabric::Fabric F>
void Engine<F>::on_recv_other(Link<F>& l, uint64_t wr, uint32_t len) {
  uint8_t* b = recv_buffer(l, wr);
  bool live = takes_messages(l);
  if (live && !l.state.may_send()) l.state.allow_send();  // the active side has spoken
  if (l.state.closing() && len) close_overtaken(l, b);
  bool ctrl = live && handle_message(l, b, len);
  if (wr_kind(wr) == kWrShared) {
    // Shared buffers go back to the pool at once, whatever became of the connection;
    // the credit the message took is owed back to its sender as for a buffer reposted.
    if (int rc = post_shared(wr_value(wr))) error(rc, "reposting a shared receive buffer failed");
    if (live && !l.state.closed() && l.credits.returned(ctrl)) l.peer->pending = true;
  } else if (takes_messages(l)) {
    repost(l, b, wr, ctrl);
  }
  if (l.state.open()) pump(*l.peer);
}

template <fabric::Fabric F>
void Engine<F>::on_recv_unbuffered_other(Link<F>& l, const uint8_t* msg, uint32_t len) {
  if (!takes_messages(l)) return;
  if (!l.state.may_send()) l.state.allow_send();  // the active side has spoken
  if (l.state.closing() && len) close_overtaken(l, msg);
  ++stats_.unbuffered_recvs;
  bool ctrl = handle_message(l, msg, len);
  owe_unbuffered(l, ctrl);
  if (l.state.open()) pump(*l.peer);
}

// The credit of a message that took no buffer is owed back as if its buffer had been
// posted again (unless the message broke the link, or took no credit).
template <fabric::Fabric F>
inline void Engine<F>::owe_unbuffered(Link<F>& l, bool ctrl) {
  if (l.attrs.uncredited_max) return;
  if (!l.state.closed() && l.credits.returned(ctrl)) l.peer->pending = true;
}

// Gives a connection's consumed receive buffer back to the fabric, in batches, and
// counts the credits this side then owes the peer.
template <fabric::Fabric F>
inline void Engine<F>::repost(Link<F>& l, uint8_t* buf, uint64_t wr, bool ctrl) {
  if (l.credits.hold({buf, l.recv_buf_size, wr}, ctrl)) [[unlikely]]
    repost_consumed(l);
}

template <fabric::Fabric F>
void Engine<F>::repost_consumed(Link<F>& l) {
  if (l.state.closed()) {  // the message (or a callback) broke the link
    l.credits.drop_held();
    return;
  }
  if (int rc = fabric_.post_recvs(l.conn, l.credits.held(), int(l.credits.held_count()),
                                  l.recv_reg.region())) {
    fail_link(l, rc,
              "reposting receive buffers for rank " + std::to_string(l.peer->rank) + " failed");
    return;
  }
  if (l.credits.reposted()) l.peer->pending = true;  // an explicit credit message is due
}

// Checks and dispatches one arrived message; true if it was a credit message. A short
// eager message (the common case) and an eager one without flags are handled here;
// every other kind goes out of line.
template <fabric::Fabric F>
inline bool Engine<F>::handle_message(Link<F>& l, const uint8_t* b, uint32_t len) {
  // The most common message first, its fields read where they arrived: a short eager
  // message, the next in order (or handed over in order by the fabric), while no
  // segments are arriving.
  using wire::Header;
  uint32_t seq;
  if (len >= wire::kShortBytes &&
      b[offsetof(Header, version_type)] == Header::make_vt(wire::Type::Short) &&
      ((seq = wire::field<uint32_t>(b, offsetof(Header, seq))) == l.recv_seq ||
       (seq == wire::kUnnumbered && l.attrs.unnumbered_shorts)) &&
      !l.reassembly.active()) [[likely]] {
    ++l.recv_seq;
    l.credits.receive(wire::field<uint16_t>(b, offsetof(Header, credits)),
                      b[offsetof(Header, ctrl_credits)]);
    take_eager(l, wire::field<uint32_t>(b, offsetof(Header, context_id)),
               wire::field<int32_t>(b, offsetof(Header, tag)), b + wire::kShortBytes,
               len - wire::kShortBytes, false, 0);
    return false;
  }
  return handle_any_message(l, b, len);
}

// Any message, checked in full.
template <fabric::Fabric F>
bool Engine<F>::handle_any_message(Link<F>& l, const uint8_t* b, uint32_t len) {
  wire::Header h;
  if (len < wire::kShortBytes) [[unlikely]] {
    bad_message(l, b, len, l.recv_seq);
    return false;
  }
  std::memcpy(&h, b, wire::kShortBytes);
  bool is_short = h.version_type == wire::Header::make_vt(wire::Type::Short);
  if (!is_short) [[unlikely]] {
    if (len < sizeof h) {
      bad_message(l, b, len, l.recv_seq);
      return false;
    }
    std::memcpy(&h, b, sizeof h);
  }
  if ((h.seq != l.recv_seq &&
       !(is_short && h.seq == wire::kUnnumbered && l.attrs.unnumbered_shorts)) ||
      (!is_short && h.source != l.peer->rank)) [[unlikely]] {
    bad_message(l, b, len, l.recv_seq);
    return false;
  }
  ++l.recv_seq;
  l.credits.receive(h.credits, h.ctrl_credits);
  if (!l.reassembly.active()) [[likely]] {  // no segments arriving
    if (is_short) [[likely]] {
      take_eager(l, h.context_id, h.tag, b + wire::kShortBytes, len - wire::kShortBytes, false, 0);
      return false;
    }
    if (h.vt_flags() == wire::Header::make_vt(wire::Type::Eager)) {
      handle_eager(l, h, b, len, false);
      return false;
    }
  }
  return handle_other(l, b, len);
}

// Every message but a plain eager one; true if it was a credit message (one that took a
// control credit: Credit, and the close handshake's but CloseNak).
template <fabric::Fabric F>
bool Engine<F>::handle_other(Link<F>& l, const uint8_t* b, uint32_t len) {
  wire::Header h{};
  std::memcpy(&h, b, std::min<uint32_t>(len, sizeof h));
  if (h.version() != wire::kVersion) {
    bad_message(l, b, len, h.seq);
    return false;
  }
  // A message's segments come back to back: nothing else that is matched may cut in.
  if (l.reassembly.active() && (h.type() == wire::Type::Eager || h.type() == wire::Type::Short ||
                                h.type() == wire::Type::Rts)) {
    bad_segment(l, l.reassembly.total, "a message cutting in before its last segment");
    return false;
  }
  switch (h.type()) {
    case wire::Type::Eager: handle_eager(l, h, b, len, h.flags & wire::kSync); break;
    case wire::Type::Rts: handle_rts(l, h, b, len); break;
    case wire::Type::Segment: handle_segment(l, h, b, len); break;
    case wire::Type::Fin:
    case wire::Type::SyncAck: handle_done(l, h, b, len); break;
    case wire::Type::Credit: return true;
    case wire::Type::Hello: break;
    case wire::Type::CloseNak: handle_close(l, h); break;  // sent as a control message
    case wire::Type::Close:
    case wire::Type::CloseAck:
    case wire::Type::CloseAsk: handle_close(l, h); return true;  // on a control credit
    case wire::Type::Rendezvous: handle_rendezvous(l, b, len); break;
    default: bad_message(l, b, len, h.seq);
  }
  return false;
}

// Says what is wrong with a message that failed the checks (expected: the sequence
// number it should have had), and fails the link it came on.
template <fabric::Fabric F>
void Engine<F>::bad_message(Link<F>& l, const uint8_t* b, uint32_t len, uint32_t expected) {
  std::string rank = "rank " + std::to_string(l.peer->rank);
  wire::Header h{};
  if (len < wire::kShortBytes)
    return fail_link(l, RDMX_ERR_PROTOCOL,
                     rank + " sent a " + std::to_string(len) +
                         "-byte message, shorter than the shortest header (" +
                         std::to_string(wire::kShortBytes) + " bytes)");
  std::memcpy(&h, b, std::min<uint32_t>(len, sizeof h));
  bool is_short = h.type() == wire::Type::Short;
  if (h.version() != wire::kVersion)
    return fail_link(l, RDMX_ERR_PROTOCOL,
                     rank + " sent a message with version " + std::to_string(h.version()) +
                         " (expected " + std::to_string(wire::kVersion) + ")");
  if (h.type() < wire::Type::Eager || h.type() > wire::kLastType)
    return fail_link(l, RDMX_ERR_PROTOCOL,
                     rank + " sent a message of unknown type " + std::to_string(int(h.type())));
  if (!is_short && len < sizeof h)
    return fail_link(l, RDMX_ERR_PROTOCOL,
                     rank + " sent a " + std::to_string(len) + "-byte message of type " +
                         std::to_string(int(h.type())) + ", shorter than its " +
                         std::to_string(sizeof h) + "-byte header");
  if (h.seq != expected || (!is_short && h.source != l.peer->rank))
    return fail_link(l, RDMX_ERR_PROTOCOL,
                     rank + " sent a message with sequence " + std::to_string(h.seq) +
                         " (expected " + std::to_string(expected) + ")" +
                         (is_short ? "" : ", source " + std::to_string(h.source)));
  fail_link(l, RDMX_ERR_PROTOCOL,
            rank + " sent a message of unknown type " + std::to_string(int(h.type())));
}

// An eager message with a length field: checked against what arrived, then taken.
// sync: a ReqRef follows the header, and the sender waits for an ack of the match.
template <fabric::Fabric F>
inline void Engine<F>::handle_eager(Link<F>& l, const wire::Header& h, const uint8_t* b,
                                    uint32_t len, bool sync) {
  uint32_t off = sizeof h;
  wire::ReqRef ref{0};
  if (sync) {
    if (len < off + sizeof ref) return bad_eager(l, h.length, len);
    std::memcpy(&ref, b + off, sizeof ref);
    off += sizeof ref;
  }
  if (len - off != h.length) [[unlikely]]
    return bad_eager(l, h.length, len);
  take_eager(l, h.context_id, h.tag, b + off, h.length, sync, ref.sender_request);
}

// An eager message's payload: delivered to the oldest matching receive, or kept as
// unexpected.
template <fabric::Fabric F>
inline void Engine<F>::take_eager(Link<F>& l, uint32_t cid, int32_t tag, const uint8_t* payload,
                                  uint64_t len, bool sync, uint64_t sender_request) {
  Peer<F>& p = *l.peer;
  if (Req* r = static_cast<Req*>(posted_.match(cid, p.rank, tag))) [[likely]] {
    deliver(*r, p.rank, cid, tag, payload, len);
    if (sync) queue_control(p, wire::Type::SyncAck, sender_request);
    return;
  }
  unexpected_eager(l, cid, tag, payload, len, sync, sender_request);
}

template <fabric::Fabric F>
void Engine<F>::bad_eager(Link<F>& l, uint64_t says, uint32_t len) {
  fail_link(l, RDMX_ERR_PROTOCOL,
            "rank " + std::to_string(l.peer->rank) +
                " sent an eager message whose length field says " + std::to_string(says) +
                " bytes but " + std::to_string(len) + " arrived");
}

// An eager message no receive was waiting for: the payload is copied aside.
template <fabric::Fabric F>
void Engine<F>::unexpected_eager(Link<F>& l, uint32_t cid, int32_t tag, const uint8_t* payload,
                                 uint64_t len, bool sync, uint64_t sender_request) {
  Unexp& u = new_unexpected(len, &l);
  u.sync = sync;
  u.remote = {0, 0, sender_request};
  u.payload = payloads_.get(len);
  if (len) std::memcpy(u.payload.data, payload, len);
  ++stats_.unexpected;
  unexpected_.add(u, cid, l.peer->rank, tag);
  hold_unexpected(l, len);
}

template <fabric::Fabric F>
template <class Body>
bool Engine<F>::read_body(Link<F>& l, const uint8_t* b, uint32_t len, Body& body,
                          const char* what) {
  if (len != sizeof(wire::Header) + sizeof body) [[unlikely]] {
    fail_link(l, RDMX_ERR_PROTOCOL,
              "rank " + std::to_string(l.peer->rank) + " sent a malformed " + what);
    return false;
  }
  std::memcpy(&body, b + sizeof(wire::Header), sizeof body);
  return true;
}

template <fabric::Fabric F>
void Engine<F>::handle_rts(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len) {
  wire::RtsBody rts;
  if (!read_body(l, b, len, rts, "rendezvous request")) return;
  RemoteData remote{rts.address, rts.key, rts.sender_request};
  int32_t src = l.peer->rank;
  if (Req* r = static_cast<Req*>(posted_.match(h.context_id, src, h.tag))) {
    start_read(*r, &l, src, h.context_id, h.tag, h.length, remote);
    return;
  }
  Unexp& u = new_unexpected(h.length, &l);
  u.rendezvous = true;
  u.remote = remote;
  ++stats_.unexpected;
  unexpected_.add(u, h.context_id, src, h.tag);
}

// FIN or SyncAck: a send of ours is done.
template <fabric::Fabric F>
void Engine<F>::handle_done(Link<F>& l, const wire::Header& h, const uint8_t* b, uint32_t len) {
  wire::ReqRef ref;
  Req* r = nullptr;
  auto want = h.type() == wire::Type::Fin ? Req::State::WaitFin : Req::State::WaitAck;
  if (len == sizeof h + sizeof ref) {
    std::memcpy(&ref, b + sizeof h, sizeof ref);
    r = requests_.find(ref.sender_request);
  }
  if (!r || r->kind != Req::Kind::Send || r->state != want || r->peer != l.peer->rank) {
    fail_link(
        l, RDMX_ERR_PROTOCOL,
        "rank " + std::to_string(l.peer->rank) + " acknowledged a send that is not waiting for it");
    return;
  }
  r->peer_node.unlink();
  unregister(*r);
  complete(*r);
}

// Receive r takes message u out of the unexpected queue.
template <fabric::Fabric F>
void Engine<F>::consume(Req& r, Unexp& u) {
  if (u.self_send) {
    Req& s = *u.self_send;
    deliver(r, u.source, u.cid, u.tag, s.buf, s.len);
    complete(s);
  } else if (!u.rendezvous) {
    deliver(r, u.source, u.cid, u.tag, u.payload.data, u.length);
    if (u.sync) queue_control(*u.link->peer, wire::Type::SyncAck, u.remote.sender_request);
    payloads_.put(u.payload);
    if (u.link) drop_unexpected(u.length);  // not a send to self
  } else {
    start_read(r, u.link, u.source, u.cid, u.tag, u.length, u.remote);
  }
  unexpected_pool_.put(&u);
}

template <fabric::Fabric F>
inline void Engine<F>::deliver(Req& r, int32_t source, uint32_t cid, int32_t tag, const void* data,
                               uint64_t len) {
  uint64_t n = std::min(len, r.len);
  copy_bytes(r.buf, data, n);
  r.status = {source, tag, n, len, len > r.len ? RDMX_ERR_TRUNCATED : RDMX_OK, cid};
  complete(r);
}

template <fabric::Fabric F>
inline typename Engine<F>::Req& Engine<F>::new_request(typename Req::Kind kind,
                                                       rdmx_completion_fn cb, void* user, void* buf,
                                                       uint64_t len, int32_t peer, uint32_t cid,
                                                       int32_t tag) {
  Req& r = *requests_.get();  // comes with no registration and its lists unlinked
  r.kind = kind;
  r.state = Req::State::Idle;
  r.sync = false;
  r.freed = false;
  r.release_after_cb = release_after_cb_;  // (only a request with a callback is released)
  r.cb = cb;
  r.user = user;
  r.buf = buf;
  r.len = len;
  r.peer = peer;
  if (kind == Req::Kind::Send) r.cid = cid;  // a receive's is in its matching key
  r.tag = tag;
  return r;
}

template <fabric::Fabric F>
inline typename Engine<F>::Unexp& Engine<F>::new_unexpected(uint64_t length, Link<F>* link) {
  Unexp& u = *unexpected_pool_.get();
  u.rendezvous = false;
  u.sync = false;
  u.claimed = false;
  u.length = length;
  u.payload = {};
  u.remote = {};
  u.link = link;
  u.self_send = nullptr;
  return u;
}

template <fabric::Fabric F>
inline void Engine<F>::complete(Req& r) {
  r.state = Req::State::Done;
  if (r.freed) {
    requests_.put(&r);
    return;
  }
  if (r.cb) {
    r.cb(r.handle(), &r.status, r.user);
    if (r.release_after_cb) requests_.put(&r);
  }
}

template <fabric::Fabric F>
int Engine<F>::set_request_release(int rule) {
  if (rule != RDMX_RELEASE_ON_FREE && rule != RDMX_RELEASE_AFTER_CALLBACK)
    return error(RDMX_ERR_INVALID, "rdmx_set_request_release: rule " + std::to_string(rule) +
                                       " is neither RDMX_RELEASE_ON_FREE (0) nor "
                                       "RDMX_RELEASE_AFTER_CALLBACK (1)");
  release_after_cb_ = rule == RDMX_RELEASE_AFTER_CALLBACK;
  return RDMX_OK;
}

template <fabric::Fabric F>
inline void Engine<F>::release(Req* r) {
  if (r->state == Req::State::Done || r->state == Req::State::Idle)
    requests_.put(r);
  else
    r->freed = true;
}

template <fabric::Fabric F>
void Engine<F>::fill_status(const Unexp& u, rdmx_status_info_t* st) const {
  if (st) *st = {u.source, u.tag, u.length, u.length, RDMX_OK, u.cid};
}

template <fabric::Fabric F>
int Engine<F>::iprobe(int32_t source, uint32_t cid, int32_t tag, int* found,
                      rdmx_status_info_t* st) {
  return probe(MatchKey::for_receive(cid, source, tag), 0, found, nullptr, st);
}

template <fabric::Fabric F>
int Engine<F>::improbe(int32_t source, uint32_t cid, int32_t tag, int* found, Unexp** msg,
                       rdmx_status_info_t* st) {
  return probe(MatchKey::for_receive(cid, source, tag), 0, found, msg, st);
}

template <fabric::Fabric F>
int Engine<F>::probe_tagged(int32_t source, uint64_t tag, uint64_t ignore, int* found, Unexp** msg,
                            rdmx_status_info_t* st) {
  auto [cid, t] = split_tag(tag);
  return probe(MatchKey::for_tagged(cid, source, t, ignore), ignore, found, msg, st);
}

// The oldest unexpected message a receive for key would take (after one progress call
// if there is none yet); msg: claimed for imrecv, out of the queue.
template <fabric::Fabric F>
int Engine<F>::probe(const MatchKey& key, uint64_t ignore, int* found, Unexp** msg,
                     rdmx_status_info_t* st) {
  auto* u = static_cast<Unexp*>(unexpected_.find(key, ignore));
  if (!u) {
    progress();
    u = static_cast<Unexp*>(unexpected_.find(key, ignore));
  }
  *found = u != nullptr;
  if (!u) return RDMX_OK;
  fill_status(*u, st);
  if (msg) {
    unexpected_.remove(*u);
    u->claimed = true;
    *msg = u;
  }
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::imrecv(Unexp* u, void* buf, uint64_t len, rdmx_completion_fn cb, void* user,
                      Req** out) {
  if (!u || !u->claimed || (u->pool_gen & 1) == 0)
    return error(RDMX_ERR_INVALID, "imrecv: the message was not claimed by improbe");
  if (!buf && len)
    return error(RDMX_ERR_INVALID, "imrecv: a null buffer with length " + std::to_string(len));
  Req& r = new_request(Req::Kind::Recv, cb, user, buf, len, u->source, u->cid, u->tag);
  *out = &r;
  u->claimed = false;
  consume(r, *u);
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::cancel(Req* r) {
  if (r->kind != Req::Kind::Recv || r->state != Req::State::Posted) return RDMX_OK;
  posted_.remove(*r);
  r->status = {r->peer, r->tag, 0, 0, RDMX_ERR_CANCELLED, r->key.cid()};
  complete(*r);
  return RDMX_OK;
}

}  // namespace rdmx::engine
