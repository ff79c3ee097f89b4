// The send side: eager messages (inline or through a bounce buffer), rendezvous
// requests-to-send, control messages, and the credit rules that decide when each may
// go on the wire.
#pragma once

#include <cstring>
#include <tuple>

#include "engine/engine.h"

namespace rdmx::engine {

template <fabric::Fabric F>
inline int Engine<F>::isend(int32_t dest, uint32_t cid, int32_t tag, const void* buf, uint64_t len,
                            uint32_t flags, rdmx_completion_fn cb, void* user, Req** out) {
  if (tag == RDMX_ANY_TAG) [[unlikely]]
    return send_arg_error(dest, true, buf, len, flags);
  return send(dest, cid, tag, buf, len, flags, cb, user, out);
}

// A send of any tag (rdmx_isend_tagged's may be RDMX_ANY_TAG's value).
template <fabric::Fabric F>
inline int Engine<F>::send(int32_t dest, uint32_t cid, int32_t tag, const void* buf, uint64_t len,
                           uint32_t flags, rdmx_completion_fn cb, void* user, Req** out) {
  if (uint32_t(dest) >= uint32_t(size_) || null_with_length(buf, len) ||
      (flags & ~(RDMX_SEND_SYNC | RDMX_SEND_NO_REQUEST_IF_DONE))) [[unlikely]]
    return send_arg_error(dest, false, buf, len, flags);
  // The common case: a small message on an open connection with nothing waiting before
  // it goes inline and is complete at once; its request only has to say so, and the
  // caller may ask for none. (A peer with a link is neither this rank nor a failed one.)
  Peer<F>& p = peers_[size_t(dest)];
  Link<F>* l = p.link.get();
  // (inline_eager_below is 0 unless the link is open and may send.)
  bool free = l && uncredited(*l, wire::kShortBytes + len);
  if (l && !(flags & RDMX_SEND_SYNC) && !p.pending && len < l->state.inline_eager_below() &&
      (free || l->credits.available() > 0) && l->sq.has_room()) [[likely]] {
    wire::Header h = short_header(cid, tag);
    if (post_short(*l, h, buf, uint32_t(len), free)) [[likely]] {
      ++stats_.eager_sends;
      if (flags & RDMX_SEND_NO_REQUEST_IF_DONE) {
        *out = nullptr;
        return RDMX_OK;
      }
      Req& r = *requests_.get();
      r.kind = Req::Kind::Send;
      r.state = Req::State::Done;
      r.status = {dest, tag, len, len, RDMX_OK, 0};
      *out = &r;
      if (cb) {
        cb(r.handle(), &r.status, user);
        if (release_after_cb_) requests_.put(&r);
      }
      return RDMX_OK;
    }
  }
  Req& r = new_request(Req::Kind::Send, cb, user, const_cast<void*>(buf), len, dest, cid, tag);
  r.status = {dest, tag, len, len, RDMX_OK, 0};
  r.sync = (flags & RDMX_SEND_SYNC) != 0;
  r.sent = 0;
  *out = &r;
  return isend_slow(p, r);
}

// Everything else: a send to self, to a failed peer, a rendezvous (registered here),
// or one that must wait for the connection, credits or a bounce buffer.
template <fabric::Fabric F>
int Engine<F>::isend_slow(Peer<F>& p, Req& r) {
  if (p.rank == rank_) {
    send_to_self(r);
    return RDMX_OK;
  }
  if (p.failed) {
    fail_request(r, p.failure_code);
    return RDMX_OK;
  }
  // Above the eager limit the link decides between segments and rendezvous; on an open
  // link that is now, so that a registration that fails is the caller's error.
  if (p.link && p.link->state.ready() && r.len > p.link->eager_limit &&
      !goes_in_segments(*p.link, r)) {
    if (int rc = register_send(p, r)) {
      requests_.put(&r);
      return rc;
    }
  }
  if (p.backlog.empty() && p.link && transmit(p, r)) return RDMX_OK;
  r.state = Req::State::Backlog;
  r.queue_node.owner = &r;
  r.queue_node.push_back(p.backlog);
  p.pending = true;
  if (!p.link)
    connect_peer(p);
  else
    pump(p);
  return RDMX_OK;
}

// Registers a send's buffer for the peer's READs: the send goes by rendezvous.
template <fabric::Fabric F>
int Engine<F>::register_send(Peer<F>& p, Req& r) {
  std::string err;
  if (int rc = register_buffer(r, r.len, fabric::kRemoteRead, err))
    return error(rc, "isend: registering " + std::to_string(r.len) + " bytes for rank " +
                         std::to_string(p.rank) + " failed: " + err);
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::send_arg_error(int32_t dest, bool any_tag, const void* buf, uint64_t len,
                              uint32_t flags) {
  if (dest < 0 || dest >= size_)
    return error(RDMX_ERR_INVALID, "isend: destination rank " + std::to_string(dest) +
                                       " is outside 0.." + std::to_string(size_ - 1));
  if (any_tag) return error(RDMX_ERR_INVALID, "isend: RDMX_ANY_TAG is not a valid tag for a send");
  if (!buf && len)
    return error(RDMX_ERR_INVALID, "isend: a null buffer with length " + std::to_string(len));
  return error(RDMX_ERR_INVALID, "isend: unknown flags " + std::to_string(flags) +
                                     " (accepted: RDMX_SEND_SYNC, RDMX_SEND_NO_REQUEST_IF_DONE)");
}

// Puts r on the wire if the link allows it now (taking it off the backlog if it was
// there); false leaves r where it is.
template <fabric::Fabric F>
inline bool Engine<F>::transmit(Peer<F>& p, Req& r) {
  Link<F>& l = *p.link;
  if (!can_send(l)) return false;
  // Above the link's eager limit: in segments, or by rendezvous (registered here if it
  // was queued before the link was open; failing completes r with the error). A peer
  // over its bound on unexpected messages asked for rendezvous above kThrottledEager (a
  // message whose segments have started goes on in segments).
  if (!r.reg && (r.len > l.eager_limit || l.peer_asks_rendezvous)) [[unlikely]] {
    bool asked = l.peer_asks_rendezvous && r.sent == 0 && r.len > wire::kThrottledEager;
    if (!asked && goes_in_segments(l, r)) return transmit_segments(p, r);
    if (asked || r.len > l.eager_limit) {
      if (int rc = register_send(p, r)) {
        fail_request(r, rc);
        return true;
      }
    }
  }
  wire::Header h = r.reg    ? header(wire::Type::Rts, r.cid, r.tag, r.len)
                   : r.sync ? header(wire::Type::Eager, r.cid, r.tag, r.len)
                            : short_header(r.cid, r.tag);
  uint64_t id = ObjectPool<Req>::id_of(&r);
  bool sent;
  if (!r.reg) {
    wire::ReqRef ref{id};
    if (r.sync) h.flags = wire::kSync;
    sent =
        post(l, h, r.sync ? &ref : nullptr, r.sync ? sizeof ref : 0, r.buf, r.len, false, &r, true);
    if (sent) {
      ++stats_.eager_sends;
      r.queue_node.unlink();
      if (r.sync) {
        r.state = Req::State::WaitAck;
        r.peer_node.owner = &r;
        r.peer_node.push_back(p.inflight);
      } else if (r.state != Req::State::WaitSent) {
        complete(r);
      }
    }
  } else {
    const typename F::Region& region = r.reg->region;
    wire::RtsBody rts{region.remote_address(r.buf), region.key(), id};
    // A fabric of several (composite) says what the peer on this link reads by.
    if constexpr (requires { fabric_.remote_ref(l.conn, region, r.buf); })
      std::tie(rts.address, rts.key) = fabric_.remote_ref(l.conn, region, r.buf);
    sent = post(l, h, &rts, sizeof rts, nullptr, 0, false);
    if (sent) {
      ++stats_.rndv_sends;
      r.queue_node.unlink();
      r.state = Req::State::WaitFin;
      r.peer_node.owner = &r;
      r.peer_node.push_back(p.inflight);
    }
  }
  return sent;
}

// Posts one message: header, optional extra body, optional payload, inline if it fits
// and through a bounce buffer if not. ctrl: a credit message, drawn from the control
// credits. owner: the send request whose buffer the payload is, so that it may go in
// place (post_bounce); completes: this message is owner's last. False if it could not go
// now (no credit left for a message that needs one, no bounce buffer, the fabric is
// full, or the link failed).
template <fabric::Fabric F>
inline bool Engine<F>::post(Link<F>& l, wire::Header& h, const void* extra, uint32_t extra_len,
                            const void* payload, uint64_t payload_len, bool ctrl, Req* owner,
                            bool completes) {
  uint32_t hlen = wire::header_bytes(h);
  uint64_t bytes = hlen + extra_len + payload_len;
  bool free = uncredited(l, bytes);
  // (The callers saw a credit of the message's kind, unless the link has uncredited
  // messages: then only a message that is not one needs checking.)
  if (!free && !ctrl && !l.credits.available()) [[unlikely]]
    return false;
  if (bytes > l.attrs.max_inline || (owner && sends_in_place(l, *owner))) [[unlikely]]
    return post_bounce(l, h, extra, extra_len, payload, payload_len, ctrl, free, owner, completes);
  fabric::Sge sge[3];
  int n = 0;
  sge[n++] = {&h, hlen, nullptr};
  if (extra_len) sge[n++] = {extra, extra_len, nullptr};
  if (payload_len) sge[n++] = {payload, uint32_t(payload_len), nullptr};
  return post_inline(l, h, sge, n, ctrl, free);
}

// An inline SEND of sge (sge[0] is h).
template <fabric::Fabric F>
inline bool Engine<F>::post_inline(Link<F>& l, wire::Header& h, const fabric::Sge* sge, int n,
                                   bool ctrl, bool uncredited) {
  return post_inline_by(
      l, h, ctrl, uncredited, [&](uint32_t flags, uint64_t wr) __attribute__((always_inline)) {
        return fabric_.send(l.conn, sge, n, flags, wr);
      });
}

template <fabric::Fabric F>
inline bool Engine<F>::post_short(Link<F>& l, wire::Header& h, const void* payload, uint32_t len,
                                  bool uncredited) {
  if constexpr (requires { fabric_.send_short(l.conn, h, payload, len, 0u, uint64_t{}); }) {
    return post_inline_by(
        l, h, false, uncredited, [&](uint32_t flags, uint64_t wr) __attribute__((always_inline)) {
          return fabric_.send_short(l.conn, h, payload, len, flags, wr);
        });
  } else {
    fabric::Sge sge[2] = {{&h, wire::kShortBytes, nullptr}, {payload, len, nullptr}};
    return post_inline(l, h, sge, len ? 2 : 1, false, uncredited);
  }
}

// Inline sends are signaled one in signal_every (and when a flush asks): that completion
// retires every send before it, and says how many in its id.
template <fabric::Fabric F>
template <class Send>
inline bool Engine<F>::post_inline_by(Link<F>& l, wire::Header& h, bool ctrl, bool uncredited,
                                      Send send) {
  stamp(l, h);
  uint32_t unsignaled = l.sq.next_inline();  // counting this one
  uint32_t flags = fabric::kSendInline;
  uint64_t wr = wr_id(kWrInline, 0);
  if (l.sq.must_signal(unsignaled)) [[unlikely]] {
    flags |= fabric::kSendSignaled;
    wr = wr_id(kWrInline, unsignaled);  // the sends its completion retires
    unsignaled = 0;
  }
  int rc = send(flags, wr);
  if (rc != RDMX_OK) [[unlikely]]
    return send_failed(l, rc);
  l.sq.posted_inline(unsignaled);
  ++stats_.inline_sends;
  posted(l, ctrl, uncredited);
  return true;
}

// A SEND too large to go inline: copied into a registered bounce buffer. Or, for a
// request's payload on a link that sends in place (sends_in_place), only the header is
// copied and the payload goes from the request's own buffer, which the fabric reads until
// the send completes: the request then waits for the completion of its last message
// (WaitSent; sends on a link complete in order), and fails with its peer meanwhile.
template <fabric::Fabric F>
bool Engine<F>::post_bounce(Link<F>& l, wire::Header& h, const void* extra, uint32_t extra_len,
                            const void* payload, uint64_t payload_len, bool ctrl, bool uncredited,
                            Req* owner, bool completes) {
  int bounce = take_bounce();
  if (bounce < 0) {
    bounce_waiters_.push_back(l.peer);
    return false;
  }
  stamp(l, h);
  uint8_t* b = bounce_mem_.get() + size_t(bounce) * recv_buf_size_;
  uint32_t hlen = wire::header_bytes(h);
  uint32_t head = hlen + extra_len;
  std::memcpy(b, &h, hlen);
  if (extra_len) std::memcpy(b + hlen, extra, extra_len);
  bool in_place = owner && payload_len && sends_in_place(l, *owner);
  fabric::Sge sge[2] = {{b, head, bounce_reg_.region().desc()},
                        {payload, uint32_t(payload_len), nullptr}};
  if (!in_place) {
    if (payload_len) std::memcpy(b + head, payload, payload_len);
    sge[0].len += uint32_t(payload_len);
  }
  if (int rc = fabric_.send(l.conn, sge, in_place ? 2 : 1, fabric::kSendSignaled,
                            wr_id(kWrBounce, uint64_t(bounce)))) {
    bounce_free_.push_back(uint32_t(bounce));
    return send_failed(l, rc);
  }
  posted(l, ctrl, uncredited);
  if (in_place) {
    ++stats_.in_place_sends;
    if (completes) {
      owner->state = Req::State::WaitSent;
      owner->peer_node.owner = owner;
      owner->peer_node.push_back(l.peer->inflight);
      bounce_owner_[size_t(bounce)] = owner;
    }
  }
  return true;
}

// The last message of a send in place went: the request is done.
template <fabric::Fabric F>
void Engine<F>::sent_in_place(uint32_t bounce) {
  Req& r = *bounce_owner_[bounce];
  bounce_owner_[bounce] = nullptr;
  r.peer_node.unlink();
  complete(r);
}

// A send in place that fails before its last message went: nothing completes it later.
template <fabric::Fabric F>
void Engine<F>::forget_in_place(const Req& r) {
  for (Req*& owner : bounce_owner_)
    if (owner == &r) owner = nullptr;
}

// Posted: the message has its sequence number, and what it returned is paid.
template <fabric::Fabric F>
inline void Engine<F>::posted(Link<F>& l, bool ctrl, bool uncredited) {
  ++l.send_seq;
  l.sq.take();
  l.credits.spend(ctrl, uncredited);
}

// The fabric refused a send: full (retried on a completion, or when the fabric says its
// queue has room again) or broken (the link fails).
template <fabric::Fabric F>
bool Engine<F>::send_failed(Link<F>& l, int rc) {
  if (rc == RDMX_ERR_AGAIN)
    ++stats_.credit_stalls;
  else
    fail_link(l, rc, "posting a send to rank " + std::to_string(l.peer->rank) + " failed");
  return false;
}

template <fabric::Fabric F>
int Engine<F>::take_bounce() {
  if (bounce_free_.empty()) return -1;
  int b = int(bounce_free_.back());
  bounce_free_.pop_back();
  return b;
}

template <fabric::Fabric F>
void Engine<F>::queue_control(Peer<F>& p, wire::Type t, uint64_t sender_request) {
  if (p.failed) return;
  p.control.push({uint8_t(t), sender_request});
  p.pending = true;
  pump(p);
}

// Sends what can go: control messages first, then the backlog in order, then an
// explicit credit return if one is due and nothing carried it.
template <fabric::Fabric F>
void Engine<F>::drain(Peer<F>& p) {
  Link<F>* l = p.link.get();
  while (can_send(*l)) {
    if (!p.control.empty()) {
      Control c = p.control.front();
      wire::Header h{};
      h.version_type = wire::Header::make_vt(wire::Type(c.type));
      h.source = rank_;
      wire::ReqRef ref{c.sender_request};
      if (!post(*l, h, &ref, sizeof ref, nullptr, 0, false)) return;
      p.control.pop();
      continue;
    }
    // A message that cannot go yet (on a link with uncredited messages, one that needs
    // a credit when none is left) still lets a credit message owed go below.
    if (p.backlog.empty() || !transmit(p, *static_cast<Req*>(p.backlog.first->owner))) break;
  }
  if (l->credits.due() && l->state.ready() &&
      (l->credits.ctrl_available() > 0 || credit_message_free(*l)) && l->sq.has_room() &&
      l->credits.owes()) {
    wire::Header h{};
    h.version_type = wire::Header::make_vt(wire::Type::Credit);
    h.source = rank_;
    if (post(*l, h, nullptr, 0, nullptr, 0, true)) ++stats_.credit_messages;
  } else if (!l->credits.available() && !p.backlog.empty()) {
    ++stats_.credit_stalls;
  }
  p.pending = !p.control.empty() || !p.backlog.empty() || l->credits.due();
}

// Only unsignaled sends are outstanding: nothing will say they completed unless a
// signaled one follows. Sends a credit message, signaled, if a credit allows it.
template <fabric::Fabric F>
bool Engine<F>::flush_unsignaled(Link<F>& l) {
  if (!l.sq.unsignaled() || !l.state.ready() || !l.sq.has_room()) return false;
  bool ctrl = l.credits.ctrl_available() > 0;
  if (!ctrl && !l.credits.available() && !credit_message_free(l))
    return false;  // wait for the peer's credits
  wire::Header h{};
  h.version_type = wire::Header::make_vt(wire::Type::Credit);
  h.source = rank_;
  return l.sq.signaled([&] { return post(l, h, nullptr, 0, nullptr, 0, ctrl); });
}

template <fabric::Fabric F>
inline void Engine<F>::on_send_done(void* user, uint64_t wr) {
  auto* l = static_cast<Link<F>*>(user);
  if (wr_kind(wr) == kWrInline) {
    l->sq.release(uint32_t(wr_value(wr)));  // this send and the unsignaled ones before it
  } else {
    l->sq.release();
    uint32_t b = uint32_t(wr_value(wr));
    bounce_free_.push_back(b);
    if (bounce_owner_[b]) sent_in_place(b);
    if (!bounce_waiters_.empty()) {
      std::vector<Peer<F>*> waiting;
      waiting.swap(bounce_waiters_);
      for (Peer<F>* p : waiting) pump(*p);
    }
  }
  if (l->state.open() && l->peer->link.get() == l) pump(*l->peer);
}

// The fabric's queue has room again for a send it refused (ConnAttrs::uncredited_max).
template <fabric::Fabric F>
void Engine<F>::on_send_room(void* user) {
  auto* l = static_cast<Link<F>*>(user);
  if (l->state.open() && l->peer->link.get() == l) pump(*l->peer);
}

// A message to this rank itself never touches the fabric: it is matched here.
template <fabric::Fabric F>
void Engine<F>::send_to_self(Req& r) {
  if (Req* rr = static_cast<Req*>(posted_.match(r.cid, rank_, r.tag))) {
    deliver(*rr, rank_, r.cid, r.tag, r.buf, r.len);
    complete(r);
    return;
  }
  Unexp& u = new_unexpected(r.len, nullptr);
  if (r.len <= max_eager_limit_ && !r.sync) {
    u.payload = payloads_.get(r.len);
    if (r.len) std::memcpy(u.payload.data, r.buf, r.len);
    complete(r);
  } else {
    u.self_send = &r;  // large or synchronous: completes when it is matched
    r.state = Req::State::WaitFin;
  }
  ++stats_.unexpected;
  unexpected_.add(u, r.cid, rank_, r.tag);
}

}  // namespace rdmx::engine
