// Connection management: lazy connect on the first message, the rdmx private data,
// simultaneous-connect resolution, and the active side speaking first (attempts over
// time, refusals and time limits: engine_connect_retry.h).
#pragma once

#include <algorithm>

#include <chrono>

#include "core/log.h"
#include "engine/engine.h"
#include "protocol/connect_msg.h"
#include "topology/numa_memory.h"

namespace rdmx::engine {

using protocol::CmKind;
using protocol::CmMessage;
using protocol::RejectReason;

template <fabric::Fabric F>
bool Engine<F>::setup_link(Link<F>& l, std::string& err) {
  l.credits.set_window(own_credit_window(l));
  l.own_eager_limit = own_eager_limit(l);
  l.recv_buf_size = buffer_size(l.own_eager_limit);
  if (receives_shared(l)) return true;  // receives come from the shared pool
  l.recv_bufs = l.credits.window() + kCtrlCredits;
  // A fabric may place the receive buffers itself, where its peer writes into them.
  if constexpr (requires(uint8_t * m) { fabric_.recv_memory(l.conn, 0u, 0u, &m, err); }) {
    if (fabric_.recv_memory(l.conn, l.recv_bufs, l.recv_buf_size, &l.recv_base, err)) return false;
  }
  if (!l.recv_base) {
    l.recv_mem = topology::alloc_local(size_t(l.recv_bufs) * l.recv_buf_size);
    l.recv_base = l.recv_mem.get();
  }
  if (!l.recv_base) {
    err = "out of memory for receive buffers";
    return false;
  }
  if (l.recv_reg.reg(fabric_, l.recv_base, size_t(l.recv_bufs) * l.recv_buf_size,
                     fabric::kLocalWrite, err))
    return false;
  receive_bytes_ += l.receive_bytes();
  std::vector<fabric::RecvBuf> bufs(l.recv_bufs);
  for (uint32_t i = 0; i < l.recv_bufs; ++i)
    bufs[i] = {l.recv_buf(i), l.recv_buf_size, wr_id(kWrRecv, i)};
  if (int rc = fabric_.post_recvs(l.conn, bufs.data(), int(bufs.size()), l.recv_reg.region())) {
    err = std::string("posting receive buffers failed: ") + rdmx_strerror(rc);
    return false;
  }
  return true;
}

// This side's eager limit for a new connection: the setting, or the fabric's choice for
// that connection (the shared receive queue's buffers are all of one size).
template <fabric::Fabric F>
uint64_t Engine<F>::own_eager_limit(const Link<F>& l) const {
  if (settings_.eager_limit >= 0 || receives_shared(l)) return max_eager_limit_;
  if constexpr (requires { fabric_.eager_limit(l.conn); }) return fabric_.eager_limit(l.conn);
  return fabric::kDefaultEagerLimit;
}

// This side's credit window for a new connection: the setting, or the fabric's choice.
template <fabric::Fabric F>
uint32_t Engine<F>::own_credit_window(const Link<F>& l) const {
  if (settings_.credits >= 0) return uint32_t(settings_.credits);
  if constexpr (requires { fabric_.credit_window(l.conn); }) return fabric_.credit_window(l.conn);
  return fabric::kDefaultCredits;
}

// What this side offers a peer in its connect or accept message, sealed with this job's
// MAC key (an accept's MAC also covers the request's nonce, bound).
template <fabric::Fabric F>
protocol::CmMessage Engine<F>::offer(protocol::CmKind kind, Link<F>& l, const uint8_t* bound) {
  CmMessage m = protocol::make_cm(kind, rank_, l.peer->rank);
  m.qp_num = fabric_.qp_num(l.conn);
  m.eager_limit = uint32_t(l.own_eager_limit);
  m.midsize_kib = uint16_t(own_midsize_limit(l) / 1024);
  m.epoch = l.peer->close_epoch;
  m.credits = uint16_t(l.credits.window());
  m.ctrl_credits = kCtrlCredits;
  m.flags = uint8_t((settings_.flow_control ? protocol::kFlowControl : 0) |
                    (receives_shared(l) ? protocol::kSharedReceive : 0));
  protocol::fresh_nonce(m);
  protocol::seal(m, mac_key_, bound);
  return m;
}

// What the peer's connect or accept message lets this side do on the link (after
// setup_link: this side's own limits are known).
template <fabric::Fabric F>
void Engine<F>::take_offer(Link<F>& l, const protocol::CmMessage& m) {
  l.credits.grant(m.credits, m.ctrl_credits);
  l.peer_eager_limit = m.eager_limit;
  l.peer_midsize_limit = uint64_t(m.midsize_kib) * 1024;
  agree_limits(l);
}

// Each side sends eagerly only up to the smaller of the two eager limits (the peer's
// receive buffers are sized by its own), and in segments only up to the smaller of the
// two mid-size limits. Segments are eager-limit pieces: too small a piece would make too
// many of them.
template <fabric::Fabric F>
void Engine<F>::agree_limits(Link<F>& l) {
  l.eager_limit = std::min(l.own_eager_limit, l.peer_eager_limit);
  l.midsize_limit =
      l.eager_limit < kMinSegment ? 0 : std::min(own_midsize_limit(l), l.peer_midsize_limit);
  if (l.peer_eager_limit != l.own_eager_limit)
    RDMX_LOG(LogLevel::Info, rank_,
             "rank %d's eager limit is %llu bytes, this rank's %llu: messages above %llu bytes "
             "to it go in segments or by rendezvous",
             l.peer->rank, static_cast<unsigned long long>(l.peer_eager_limit),
             static_cast<unsigned long long>(l.own_eager_limit),
             static_cast<unsigned long long>(l.eager_limit));
}

template <fabric::Fabric F>
void Engine<F>::connect_peer(Peer<F>& p) {
  if (!key_ready_) {
    // Nothing can be proven without the job secret: the sends wait for it (bounded by
    // RDMX_CONNECT_TIMEOUT_MS, expire_secret_wait()).
    if (!p.awaiting_secret) {
      p.awaiting_secret = true;
      ++tick_.connecting;
    }
    return;
  }
  if (p.address.empty()) {
    fail_peer(p, RDMX_ERR_UNREACHABLE,
              "no address for rank " + std::to_string(p.rank) + " (rdmx_add_peer was not called)");
    return;
  }
  if (dialing_ >= kMaxDialing) {
    // Started once one of this rank's connects in flight ends (check_connect_timeouts).
    auto now = std::chrono::steady_clock::now();
    connect_later(p, now, now);
    p.history->dial_wait = true;
    return;
  }
  auto l = std::make_unique<Link<F>>();
  l->peer = &p;
  l->active = true;
  l->state.allow_send();
  l->started = std::chrono::steady_clock::now();
  std::string err;
  int rc = fabric_.create_conn(p.address.data(), p.address.size(), nullptr, l.get(), &l->conn, err);
  if (rc == RDMX_OK && !setup_link(*l, err)) rc = RDMX_ERR_NO_MEMORY;
  if (rc == RDMX_OK) {
    CmMessage m = offer(CmKind::Connect, *l, nullptr);
    std::memcpy(l->request_nonce, m.nonce, sizeof m.nonce);
    rc = fabric_.connect(l->conn, &m, sizeof m, err);
  }
  Link<F>* raw = l.get();
  p.link = std::move(l);
  note_live(p);
  ++tick_.connecting;
  ++dialing_;
  if (rc != RDMX_OK) {
    fail_link(*raw, rc, "connecting to rank " + std::to_string(p.rank) + " failed: " + err);
    return;
  }
  RDMX_LOG(LogLevel::Info, rank_, "connecting to rank %d", p.rank);
}

template <fabric::Fabric F>
void Engine<F>::on_connect_request(typename F::ConnRequest* req, const uint8_t* pdata, size_t len) {
  if (!key_ready_) {
    // Nothing can be verified yet: the requester is asked to try again (on_rejected).
    CmMessage r = protocol::make_cm(CmKind::Reject, rank_, -1);
    r.reason = RejectReason::NotReady;
    fabric_.reject(req, &r, sizeof r);
    return;
  }
  CmMessage m;
  std::string why;
  RejectReason reason = protocol::parse_cm(pdata, len, CmKind::Connect, m, why);
  // Membership first: nothing a non-member says reaches the state of any peer.
  if (reason == RejectReason::None) {
    if (!proven(m, nullptr)) {
      reason = RejectReason::WrongJob;
      why = "its MAC does not verify with this job's key";
    } else if (m.dst_rank != rank_) {
      reason = RejectReason::WrongRank;
      why = "addressed to rank " + std::to_string(m.dst_rank);
    } else if (m.src_rank < 0 || m.src_rank >= size_ || m.src_rank == rank_) {
      reason = RejectReason::UnknownRank;
      why = "source rank " + std::to_string(m.src_rank) + " is not a peer in a job of " +
            std::to_string(size_);
    }
  }
  Peer<F>* p = reason == RejectReason::None ? &peers_[size_t(m.src_rank)] : nullptr;
  if (p) {
    // A member's request, recorded or recognised: a recorded one sent again is a replay.
    uint64_t nonce;
    std::memcpy(&nonce, m.nonce, sizeof nonce);
    std::vector<uint64_t>& seen = p->connect_history().nonces_seen;
    if (std::find(seen.begin(), seen.end(), nonce) != seen.end()) {
      reason = RejectReason::Replayed;
      why = "a request of rank " + std::to_string(m.src_rank) + " seen before";
      p = nullptr;
    } else {
      if (seen.size() >= 256) seen.erase(seen.begin());
      seen.push_back(nonce);
    }
  }
  if (p) {
    // Which connection the request follows (engine_close.h): one made before a close this
    // side has since agreed to was abandoned by its requester; one made after a close
    // this side proposed means the peer agreed, its agreement, its last message on the
    // old connection, still on its way.
    auto ahead = int8_t(uint8_t(m.epoch - p->close_epoch));
    if (ahead < 0) {
      reason = RejectReason::Stale;
      why = "a request of rank " + std::to_string(m.src_rank) + " made before " +
            std::to_string(-ahead) + " close(s) of its connection";
      p = nullptr;
    } else if (ahead > 0 && p->link && p->link->state.closing()) {
      close_agreed(*p->link, true);
    }
  }
  if (p && p->failed) {
    reason = RejectReason::Shutdown;
    why = "that peer was already given up";
  } else if (p && p->link) {
    bool simultaneous = p->link->active && p->link->state.connecting();
    if (simultaneous && rank_ > m.src_rank) {
      // Both sides connected at once: the lower rank's connection wins, ours will be
      // rejected by the peer. Nothing was sent on it; the backlog stays on the peer.
      RDMX_LOG(LogLevel::Info, rank_, "simultaneous connect with rank %d: accepting its connection",
               m.src_rank);
      retire(std::move(p->link));
    } else {
      reason = RejectReason::Duplicate;
      why = "a connection with rank " + std::to_string(m.src_rank) + " already exists";
    }
  }
  if (reason != RejectReason::None) {
    RDMX_LOG(reason == RejectReason::Duplicate || reason == RejectReason::Stale ? LogLevel::Info
                                                                                : LogLevel::Warn,
             rank_, "rejecting a connection request: %s (%s)", protocol::reject_reason_text(reason),
             why.c_str());
    // A reject goes to whoever asked, member or not: it carries nothing secret.
    CmMessage r = protocol::make_cm(CmKind::Reject, rank_, m.src_rank);
    r.reason = reason;
    fabric_.reject(req, &r, sizeof r);
    return;
  }
  auto l = std::make_unique<Link<F>>();
  l->peer = p;
  l->active = false;
  l->started = std::chrono::steady_clock::now();
  std::string err;
  int rc = fabric_.create_conn(nullptr, 0, req, l.get(), &l->conn, err);
  if (rc == RDMX_OK && !setup_link(*l, err)) rc = RDMX_ERR_NO_MEMORY;
  if (rc == RDMX_OK) take_offer(*l, m);
  if (rc != RDMX_OK) {
    error(rc, "cannot accept rank " + std::to_string(m.src_rank) + ": " + err);
    CmMessage r = protocol::make_cm(CmKind::Reject, rank_, m.src_rank);
    r.reason = RejectReason::Resources;
    fabric_.reject(req, &r, sizeof r);
    if (l->conn) retire(std::move(l));
    return;
  }
  CmMessage a = offer(CmKind::Accept, *l, m.nonce);
  p->link = std::move(l);
  note_live(*p);
  ++tick_.connecting;
  rc = fabric_.accept(p->link->conn, req, &a, sizeof a, err);
  if (rc != RDMX_OK)
    fail_link(*p->link, rc, "accepting rank " + std::to_string(p->rank) + ": " + err);
}

template <fabric::Fabric F>
void Engine<F>::on_established(void* user, const fabric::ConnAttrs& attrs, const uint8_t* pdata,
                               size_t len) {
  auto* l = static_cast<Link<F>*>(user);
  if (!l->state.connecting()) {
    if (l->state.closed()) fabric_.disconnect(l->conn);
    return;
  }
  Peer<F>& p = *l->peer;
  if (l->active) {
    CmMessage m;
    std::string why;
    RejectReason r = protocol::parse_cm(pdata, len, CmKind::Accept, m, why);
    if (r == RejectReason::None && !proven(m, l->request_nonce)) {
      r = RejectReason::WrongJob;
      why = "the accept does not prove membership of this job (its MAC does not verify)";
    } else if (r == RejectReason::None && (m.src_rank != p.rank || m.dst_rank != rank_)) {
      r = RejectReason::WrongRank;
      why = "the accept came from rank " + std::to_string(m.src_rank) + " for rank " +
            std::to_string(m.dst_rank);
    }
    if (r != RejectReason::None) {
      fail_link(*l, RDMX_ERR_PROTOCOL,
                "rank " + std::to_string(p.rank) + " accepted with invalid private data: " + why);
      return;
    }
    take_offer(*l, m);
  }
  left_connecting(*l);
  if (p.history) p.history->refusals = 0;
  l->attrs = attrs;
  choose_reads(*l);
  l->sq.open(attrs.max_send_wr, kMaxSignalInterval);
  l->state.set_open(inline_eager_below(*l));
  ++stats_.connections;
  if (!stats_.min_read_depth || attrs.initiator_depth < stats_.min_read_depth)
    stats_.min_read_depth = attrs.initiator_depth;
  RDMX_LOG(LogLevel::Info, rank_,
           "connected to rank %d (%s): initiator depth %u, responder resources %u, inline %u, "
           "credits %u, eager limit %llu, mid-size limit %llu, READs of %llu bytes (%llu for a "
           "lone message), %u in flight",
           p.rank, l->active ? "active" : "passive", attrs.initiator_depth,
           attrs.responder_resources, attrs.max_inline, l->credits.available(),
           static_cast<unsigned long long>(l->eager_limit),
           static_cast<unsigned long long>(l->midsize_limit),
           static_cast<unsigned long long>(l->read_chunk),
           static_cast<unsigned long long>(l->lone_read_chunk), l->read_pacer.depth());
  if (l->active) {
    // The active side speaks first (iWARP requires it; every device accepts it).
    wire::Header h{};
    h.version_type = wire::Header::make_vt(wire::Type::Hello);
    h.source = rank_;
    if (!post(*l, h, nullptr, 0, nullptr, 0, false)) return;
  }
  schedule_reads(*l);  // rendezvous messages that came before this event
  pump(p);
}

template <fabric::Fabric F>
void Engine<F>::on_rejected(void* user, const uint8_t* pdata, size_t len, const char* why) {
  auto* l = static_cast<Link<F>*>(user);
  if (l->state.closed()) return;  // a retired attempt: expected
  CmMessage m;
  std::string parse_why;
  RejectReason r = protocol::parse_cm(pdata, len, CmKind::Reject, m, parse_why);
  std::string text = r == RejectReason::None
                         ? protocol::reject_reason_text(m.reason)
                         : std::string(why) + " (no rdmx reason: " + parse_why + ")";
  if (r == RejectReason::None && retry_refused(*l, m.reason)) return;
  if (r == RejectReason::None && m.reason == RejectReason::Duplicate) {
    // Lost a simultaneous connect; the peer's connection to us carries the traffic.
    if (l->peer->link.get() == l) retire(std::move(l->peer->link));
    return;
  }
  fail_link(*l, RDMX_ERR_REJECTED,
            "rank " + std::to_string(l->peer->rank) + " rejected the connection: " + text);
}

template <fabric::Fabric F>
int Engine<F>::set_job_secret(const uint8_t* secret, size_t len) {
  if (!secret || len < 16 || len > 64)
    return error(RDMX_ERR_INVALID, "rdmx_set_job_secret: a secret of " + std::to_string(len) +
                                       " bytes (16 to 64 accepted)");
  bool linked = std::any_of(peers_.begin(), peers_.end(), [](auto& p) { return bool(p.link); });
  if (linked || stats_.connections > 0)
    return error(RDMX_ERR_INVALID,
                 "rdmx_set_job_secret: connections exist already; the secret must be set "
                 "before the first");
  mac_key_ = protocol::secret_mac_key(secret, len);
  key_ready_ = true;
  RDMX_LOG(LogLevel::Info, rank_, "job secret set: connections prove membership with it");
  for (auto& p : peers_)
    if (p.awaiting_secret) {
      p.awaiting_secret = false;
      --tick_.connecting;
      if (!p.link && !p.failed && !p.backlog.empty()) connect_peer(p);
    }
  return RDMX_OK;
}

// The job secret never came: what waited for it fails, in words.
template <fabric::Fabric F>
void Engine<F>::expire_secret_wait() {
  for (auto& p : peers_)
    if (p.awaiting_secret) {
      p.awaiting_secret = false;
      --tick_.connecting;
      fail_peer(p, RDMX_ERR_TIMEOUT,
                "no job secret was given (RDMX_AUTH=secret: RDMX_JOB_SECRET or "
                "rdmx_set_job_secret) within " +
                    std::to_string(settings_.connect_timeout_ms) +
                    " ms (RDMX_CONNECT_TIMEOUT_MS): rank " + std::to_string(p.rank) +
                    " cannot be connected");
    }
}

}  // namespace rdmx::engine
