// Failures: a work request or connection error fails its link, and a failed link
// fails every request that depended on that peer, with the peer and cause in words.
#pragma once

#include "core/log.h"
#include "engine/engine.h"
#include "fabric/fabric.h"

namespace rdmx::engine {

template <fabric::Fabric F>
void Engine<F>::on_wr_error(void* user, uint64_t wr, fabric::Failure f, const char* why) {
  auto* l = static_cast<Link<F>*>(user);
  switch (wr_kind(wr)) {
    case kWrRecv: break;
    case kWrShared:
      // A shared buffer goes back to the pool whatever became of the connection.
      if (int rc = post_shared(wr_value(wr))) error(rc, "reposting a shared receive buffer failed");
      break;
    case kWrRead:
      l->sq.release();
      --l->reads_outstanding;
      l->read_pacer.forget();
      break;
    case kWrBounce:
      bounce_free_.push_back(uint32_t(wr_value(wr)));
      bounce_owner_[wr_value(wr)] = nullptr;  // its request fails with the link
      l->sq.release();
      break;
    default: l->sq.release(); break;
  }
  if (l->state.closed()) return;  // flushes after a failure we handled
  std::string what = "connection to rank " + std::to_string(l->peer->rank) + " failed: " + why;
  if (f == fabric::Failure::RemoteAccess) {
    // A READ refused: a bad key or range (a protocol error), or a peer that is dying,
    // whose memory is freed before its connection is torn down. Its disconnect, if it
    // comes within kRefusalGrace, says which (check_refusals); what the refusal flushed
    // meanwhile says nothing.
    if (!l->refused) {
      l->refused = true;
      l->refused_at = std::chrono::steady_clock::now();
      l->refusal = what;
      ++refused_links_;
      update_upkeep();
    }
    return;
  }
  if (l->refused && f == fabric::Failure::Flushed) return;
  fail_link(*l, RDMX_ERR_PEER_LOST, what);
}

// Links whose peer refused a READ and did not go within the grace: a protocol error.
template <fabric::Fabric F>
void Engine<F>::check_refusals() {
  auto now = std::chrono::steady_clock::now();
  for (auto& p : peers_) {
    Link<F>* l = p.link.get();
    if (l && l->refused && now - l->refused_at > kRefusalGrace)
      fail_link(*l, RDMX_ERR_PROTOCOL, l->refusal);
  }
}

template <fabric::Fabric F>
void Engine<F>::on_conn_error(void* user, fabric::Failure f, const char* why) {
  auto* l = static_cast<Link<F>*>(user);
  if (l->state.closed()) {
    // The proposer of a close disconnected (engine_close.h): this side's end goes too.
    if (l->closed_by_agreement) fabric_.disconnect(l->conn);
    return;
  }
  bool connecting = l->state.connecting();
  int code = f == fabric::Failure::Unreachable ? RDMX_ERR_UNREACHABLE : RDMX_ERR_PEER_LOST;
  fail_link(*l, code,
            std::string(connecting ? "connecting to rank " : "connection to rank ") +
                std::to_string(l->peer->rank) + " failed: " + why);
}

template <fabric::Fabric F>
void Engine<F>::fail_link(Link<F>& l, int code, const std::string& why) {
  if (l.state.closed()) return;
  note_gone(l);
  if (l.state.connecting()) left_connecting(l);
  if (l.refused) {
    l.refused = false;
    --refused_links_;
    update_upkeep();
  }
  l.state.set_closed();
  drop_segments(l);
  if (l.conn) fabric_.disconnect(l.conn);  // null when create_conn itself failed
  Peer<F>& p = *l.peer;
  if (p.link.get() != &l) return;
  graveyard_.push_back(std::move(p.link));
  fail_peer(p, code, why);
}

template <fabric::Fabric F>
void Engine<F>::fail_peer(Peer<F>& p, int code, const std::string& why) {
  if (p.failed) return;
  p.failed = true;
  ++failed_peers_;
  p.failure_code = code;
  last_error_ = why;
  // A peer that goes away with nothing pending (it finalized first) is not an error.
  std::vector<PostedEntry*> posted = posted_.take_source(p.rank);
  bool pending = !p.backlog.empty() || !p.inflight.empty() || !p.control.empty() || !posted.empty();
  if (pending)
    RDMX_LOG(LogLevel::Error, rank_, "%s", why.c_str());
  else
    RDMX_LOG(LogLevel::Info, rank_, "%s", why.c_str());
  p.control.clear();
  while (!p.backlog.empty()) {
    Req& r = *static_cast<Req*>(p.backlog.first->owner);
    r.queue_node.unlink();
    fail_request(r, code);
  }
  while (!p.inflight.empty()) {
    Req& r = *static_cast<Req*>(p.inflight.first->owner);
    r.peer_node.unlink();
    fail_request(r, code);
  }
  for (PostedEntry* e : posted) {
    fail_request(*static_cast<Req*>(e), code);
  }
}

// Completes r with an error, undoing whatever it holds.
template <fabric::Fabric F>
void Engine<F>::fail_request(Req& r, int code) {
  if (r.state == Req::State::Posted) posted_.remove(r);
  if (r.state == Req::State::WaitSent) forget_in_place(r);
  r.queue_node.unlink();
  r.peer_node.unlink();
  unregister(r);
  // A send's status was set when it was made, a rendezvous or mid-size receive's when it
  // matched.
  if (r.kind == Req::Kind::Recv && r.state != Req::State::Reading &&
      r.state != Req::State::Assembling)
    r.status = {r.peer, r.tag, 0, 0, RDMX_OK, r.key.cid()};
  r.status.error = code;
  if (r.kind == Req::Kind::Recv) r.status.length = 0;
  complete(r);
}

}  // namespace rdmx::engine
