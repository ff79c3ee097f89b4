// The cap on live connections (RDMX_MAX_CONNECTIONS): past it, the least recently used
// idle connection is closed by agreement with its peer, and opened again, through the
// same handshake as any, when a message next goes to that peer.
//
// Only a link's active side proposes a close (Close, carrying how many messages it has
// received on the link); the passive side, when it is the one over its cap, asks for one
// (CloseAsk). The passive side agrees (CloseAck, its last message on the link) only if
// every message it sent has arrived (the count matches) and nothing is in flight either
// way (idle: no backlog, no control message, no request waiting on the peer, no READ, no
// segments); otherwise it answers CloseNak, or says nothing when its own messages are
// still on their way: their arrival tells the proposer that the peer spoke first. Each
// side's messages arrive in order, so once the Close has arrived every message of the
// proposer has too, and once the CloseAck has, every message of the passive side: no
// message is lost and none overtakes another across a close and the reopen, and no
// request fails. The proposer then disconnects; a peer that never answers times out.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/log.h"
#include "engine/engine.h"

namespace rdmx::engine {

// The live-connection cap when RDMX_MAX_CONNECTIONS is -1: what the process's
// descriptor limit (RLIMIT_NOFILE) leaves room for, 2 per connection (a socket, and
// through shared memory a segment while it is set up) after 256 for everything else,
// and never fewer than 256. A job dies when it runs out of descriptors; a rank over the
// cap only closes its idle connections, and a cap below the peers a pattern touches at
// every step makes each of its messages reconnect (docs/scale.md): the default caps
// only where the limit would otherwise be hit.
inline uint32_t default_max_connections() {
  constexpr uint64_t kReserved = 256, kPerConnection = 2, kFloor = 256, kCeiling = 1 << 20;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kCeiling;
  uint64_t room = rl.rlim_cur > kReserved ? (rl.rlim_cur - kReserved) / kPerConnection : 0;
  return uint32_t(std::clamp(room, kFloor, kCeiling));
}

// l has become p's link: counted as live.
template <fabric::Fabric F>
void Engine<F>::note_live(Peer<F>& p) {
  Link<F>& l = *p.link;
  l.live = true;
  ++live_links_;
  if (p.was_closed) ++stats_.connection_reopens;
  update_upkeep();
}

// l leaves the count of live links (it failed, was retired or closed).
template <fabric::Fabric F>
void Engine<F>::note_gone(Link<F>& l) {
  if (l.state.closing()) --closing_;
  if (l.live) {
    l.live = false;
    --live_links_;
  }
  update_upkeep();
}

// Nothing is in flight on l either way that a close would cut, and a control message
// (the close handshake's) may go.
template <fabric::Fabric F>
bool Engine<F>::idle(const Link<F>& l) const {
  const Peer<F>& p = *l.peer;
  return l.state.ready() && !l.refused && p.backlog.empty() && p.control.empty() &&
         p.inflight.empty() && !l.reassembly.active() && l.reads_outstanding == 0 &&
         l.read_queue.empty() && l.sq.only_unsignaled() && l.sq.has_room() &&
         (l.credits.ctrl_available() > 0 || credit_message_free(l));
}

// A header-only message of the close handshake, on a control credit, signaled (it
// retires the unsignaled sends before it). CloseNak alone goes as a control message
// (queue_control), on a regular credit, whenever one comes.
template <fabric::Fabric F>
bool Engine<F>::post_close_message(Link<F>& l, wire::Type t, uint64_t length) {
  wire::Header h{};
  h.version_type = wire::Header::make_vt(t);
  h.source = rank_;
  h.length = length;
  return l.sq.signaled([&] { return post(l, h, nullptr, 0, nullptr, 0, true); });
}

// How long a side waits before it asks for a close again, or proposes one again on a link
// whose last proposal failed: the peer is busy with the link (a message of its own on the
// way, a request waiting on this side), and asking at every look would flood it.
inline constexpr std::chrono::milliseconds kCloseRetryAfter{100};

// Over the cap: the idle links that have gone longest without a message are closed (on
// their active side) or asked to be (on their passive side), as many as the cap is
// exceeded by. Looked at most once a millisecond; each look counts, per link, the looks
// in a row that saw no message, which orders the links from least recently used (the
// oldest first among equals). A link whose last proposal failed less than
// kCloseRetryAfter ago is passed over.
template <fabric::Fabric F>
void Engine<F>::enforce_cap() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_cap_look_) return;
  next_cap_look_ = now + std::chrono::milliseconds(1);
  if (!over_cap()) return;
  std::vector<Link<F>*> idle_links;
  for (auto& p : peers_) {
    Link<F>* l = p.link.get();
    if (!l || !l->live) continue;
    uint64_t seen = uint64_t(l->send_seq) + l->recv_seq;
    if (seen != l->activity) {
      l->activity = seen;
      l->quiet_looks = 0;
    } else {
      ++l->quiet_looks;
    }
    if (idle(*l) && now - l->close_failed >= kCloseRetryAfter) idle_links.push_back(l);
  }
  size_t want = live_links_ - max_links_;
  want = want > closing_ ? want - closing_ : 0;
  want = std::min(want, idle_links.size());
  // Quiet longest first; among equals, the oldest connection.
  std::partial_sort(idle_links.begin(), idle_links.begin() + want, idle_links.end(),
                    [](const Link<F>* a, const Link<F>* b) {
                      return a->quiet_looks != b->quiet_looks ? a->quiet_looks > b->quiet_looks
                                                              : a->started < b->started;
                    });
  for (size_t i = 0; i < want; ++i) {
    Link<F>& l = *idle_links[i];
    if (l.active) {
      propose_close(l);
    } else if (now - l.close_asked > kCloseRetryAfter) {
      if (post_close_message(l, wire::Type::CloseAsk, 0)) l.close_asked = now;
    }
  }
}

// The active side proposes to close l: from now on it sends nothing on it.
template <fabric::Fabric F>
void Engine<F>::propose_close(Link<F>& l) {
  if (!post_close_message(l, wire::Type::Close, l.recv_seq)) return;
  l.state.set_closing();
  l.close_asked = std::chrono::steady_clock::now();
  ++closing_;
  ++stats_.close_proposals;
  update_upkeep();
  RDMX_LOG(LogLevel::Debug, rank_, "closing the idle connection to rank %d (%u live, cap %u)",
           l.peer->rank, live_links_, max_links_);
}

// A message other than the peer's answer reached a link this side proposed to close:
// the peer spoke first, and ignores (or has refused) the proposal.
template <fabric::Fabric F>
void Engine<F>::close_overtaken(Link<F>& l, const uint8_t* b) {
  auto t = wire::Type(b[0] & 0x0f);
  if (t != wire::Type::CloseAck && t != wire::Type::CloseNak) resume_open(l);
}

// The proposal failed: l is Open again, and not proposed again for a while.
template <fabric::Fabric F>
void Engine<F>::resume_open(Link<F>& l) {
  l.state.resume();
  l.close_failed = std::chrono::steady_clock::now();
  --closing_;
  update_upkeep();
  l.quiet_looks = 0;
  schedule_reads(l);
  pump(*l.peer);
}

// A message of the close handshake arrived on l.
template <fabric::Fabric F>
void Engine<F>::handle_close(Link<F>& l, const wire::Header& h) {
  bool from_active = h.type() == wire::Type::Close;
  if (from_active == l.active) {
    fail_link(l, RDMX_ERR_PROTOCOL,
              "rank " + std::to_string(l.peer->rank) + " sent a close message of type " +
                  std::to_string(int(h.type())) + " that only the " +
                  (l.active ? "active" : "passive") + " side of a connection sends");
    return;
  }
  switch (h.type()) {
    case wire::Type::Close:
      // Messages of ours still on their way: their arrival answers the proposer.
      if (h.length != l.send_seq) return;
      if (idle(l) && post_close_message(l, wire::Type::CloseAck, 0)) {
        close_agreed(l, false);
      } else if (!l.state.closed()) {
        queue_control(*l.peer, wire::Type::CloseNak, 0);
      }
      return;
    case wire::Type::CloseAck:
      if (l.state.closing()) {
        close_agreed(l, true);
        return;
      }
      fail_link(l, RDMX_ERR_PROTOCOL,
                "rank " + std::to_string(l.peer->rank) + " agreed to a close never proposed");
      return;
    case wire::Type::CloseNak:
      if (l.state.closing()) resume_open(l);
      return;
    default:  // CloseAsk
      if (l.state.ready() && idle(l)) propose_close(l);
      return;
  }
}

// Both sides agreed: l is closed, without failing anything. The proposer disconnects
// (the peer's last message, its agreement, has arrived); the peer waits for that.
// Sends made meanwhile for the peer open a new connection.
template <fabric::Fabric F>
void Engine<F>::close_agreed(Link<F>& l, bool disconnect) {
  Peer<F>& p = *l.peer;
  note_gone(l);
  l.state.set_closed();
  l.closed_by_agreement = true;
  ++stats_.connection_closes;
  p.was_closed = true;
  ++p.close_epoch;
  if (disconnect) fabric_.disconnect(l.conn);
  RDMX_LOG(LogLevel::Info, rank_, "closed the idle connection to rank %d by agreement (%u live)",
           p.rank, live_links_);
  if (p.link.get() == &l) bury(std::move(p.link));
  if (!p.backlog.empty() && !p.failed) {
    auto now = std::chrono::steady_clock::now();
    connect_later(p, now, now);
  }
}

// Proposals that were never answered: the peer is gone.
template <fabric::Fabric F>
void Engine<F>::check_closes() {
  if (over_cap()) enforce_cap();
  if (!closing_) return;
  auto now = std::chrono::steady_clock::now();
  auto limit = std::chrono::milliseconds(settings_.connect_timeout_ms);
  for (auto& p : peers_) {
    Link<F>* l = p.link.get();
    if (l && l->state.closing() && now - l->close_asked > limit)
      fail_link(*l, RDMX_ERR_TIMEOUT,
                "rank " + std::to_string(p.rank) + " did not answer a close within " +
                    std::to_string(settings_.connect_timeout_ms) + " ms (RDMX_CONNECT_TIMEOUT_MS)");
  }
}

}  // namespace rdmx::engine
