// Connection management: lazy connect on the first message, the rdmx private data,
// simultaneous-connect resolution, and the active side speaking first.
#pragma once

#include <algorithm>

#include <chrono>

#include "core/log.h"
#include "engine/engine.h"
#include "protocol/connect_msg.h"

namespace rdmx::engine {

using protocol::CmKind;
using protocol::CmMessage;
using protocol::RejectReason;

template <fabric::Fabric F>
bool Engine<F>::setup_link(Link<F>& l, std::string& err) {
  l.credits.set_window(uint32_t(settings_.credits));
  l.recv_buf_size = recv_buf_size_;
  if (settings_.srq) return true;  // receives come from the shared queue
  l.recv_bufs = l.credits.window() + kCtrlCredits;
  // A fabric may place the receive buffers itself, where its peer writes into them.
  if constexpr (requires(uint8_t * m) { fabric_.recv_memory(l.conn, 0u, 0u, &m, err); }) {
    if (fabric_.recv_memory(l.conn, l.recv_bufs, l.recv_buf_size, &l.recv_base, err)) return false;
  }
  if (!l.recv_base) {
    l.recv_mem = alloc_aligned(size_t(l.recv_bufs) * l.recv_buf_size);
    l.recv_base = l.recv_mem.get();
  }
  if (!l.recv_base) {
    err = "out of memory for receive buffers";
    return false;
  }
  if (l.recv_reg.reg(fabric_, l.recv_base, size_t(l.recv_bufs) * l.recv_buf_size,
                     fabric::kLocalWrite, err))
    return false;
  std::vector<fabric::RecvBuf> bufs(l.recv_bufs);
  for (uint32_t i = 0; i < l.recv_bufs; ++i)
    bufs[i] = {l.recv_buf(i), l.recv_buf_size, wr_id(kWrRecv, i)};
  if (int rc = fabric_.post_recvs(l.conn, bufs.data(), int(bufs.size()), l.recv_reg.region())) {
    err = std::string("posting receive buffers failed: ") + rdmx_strerror(rc);
    return false;
  }
  return true;
}

// What this side offers a peer in its connect or accept message.
template <fabric::Fabric F>
protocol::CmMessage Engine<F>::offer(protocol::CmKind kind, Link<F>& l) {
  CmMessage m = protocol::make_cm(kind, job_key_, rank_, l.peer->rank);
  m.qp_num = fabric_.qp_num(l.conn);
  m.eager_limit = uint32_t(settings_.eager_limit);
  m.credits = uint16_t(l.credits.window());
  m.ctrl_credits = kCtrlCredits;
  m.flags = uint8_t((settings_.flow_control ? protocol::kFlowControl : 0) |
                    (settings_.srq ? protocol::kSharedReceive : 0));
  return m;
}

// What the peer's connect or accept message lets this side do on the link. Each side
// sends eagerly only up to the smaller of the two eager limits: the peer's receive
// buffers are sized by its own.
template <fabric::Fabric F>
void Engine<F>::take_offer(Link<F>& l, const protocol::CmMessage& m) {
  l.credits.grant(m.credits, m.ctrl_credits, m.flags & protocol::kSharedReceive);
  l.eager_limit = std::min<uint64_t>(settings_.eager_limit, m.eager_limit);
  if (m.eager_limit != settings_.eager_limit)
    RDMX_LOG(LogLevel::Info, rank_,
             "rank %d's eager limit is %u bytes, this rank's %llu: messages above %llu bytes "
             "to it go by rendezvous",
             l.peer->rank, m.eager_limit, static_cast<unsigned long long>(settings_.eager_limit),
             static_cast<unsigned long long>(l.eager_limit));
}

template <fabric::Fabric F>
void Engine<F>::connect_peer(Peer<F>& p) {
  if (p.address.empty()) {
    fail_peer(p, RDMX_ERR_UNREACHABLE,
              "no address for rank " + std::to_string(p.rank) + " (rdmx_add_peer was not called)");
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
    CmMessage m = offer(CmKind::Connect, *l);
    rc = fabric_.connect(l->conn, &m, sizeof m, err);
  }
  Link<F>* raw = l.get();
  p.link = std::move(l);
  ++connecting_;
  if (rc != RDMX_OK) {
    fail_link(*raw, rc, "connecting to rank " + std::to_string(p.rank) + " failed: " + err);
    return;
  }
  RDMX_LOG(LogLevel::Info, rank_, "connecting to rank %d", p.rank);
}

template <fabric::Fabric F>
void Engine<F>::on_connect_request(typename F::ConnRequest* req, const uint8_t* pdata, size_t len) {
  CmMessage m;
  std::string why;
  RejectReason reason = protocol::parse_cm(pdata, len, CmKind::Connect, m, why);
  if (reason == RejectReason::None) {
    if (job_key_ && m.job_key != job_key_) {
      reason = RejectReason::WrongJob;
      why = "job key mismatch";
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
    RDMX_LOG(reason == RejectReason::Duplicate ? LogLevel::Info : LogLevel::Warn, rank_,
             "rejecting a connection request: %s (%s)", protocol::reject_reason_text(reason),
             why.c_str());
    // A reject goes to whoever asked, member or not: it carries no job key.
    CmMessage r = protocol::make_cm(CmKind::Reject, 0, rank_, m.src_rank);
    r.reason = reason;
    fabric_.reject(req, &r, sizeof r);
    return;
  }
  auto l = std::make_unique<Link<F>>();
  l->peer = p;
  l->active = false;
  l->started = std::chrono::steady_clock::now();
  take_offer(*l, m);
  std::string err;
  int rc = fabric_.create_conn(nullptr, 0, req, l.get(), &l->conn, err);
  if (rc == RDMX_OK && !setup_link(*l, err)) rc = RDMX_ERR_NO_MEMORY;
  if (rc != RDMX_OK) {
    error(rc, "cannot accept rank " + std::to_string(m.src_rank) + ": " + err);
    CmMessage r = protocol::make_cm(CmKind::Reject, 0, rank_, m.src_rank);
    r.reason = RejectReason::Resources;
    fabric_.reject(req, &r, sizeof r);
    if (l->conn) retire(std::move(l));
    return;
  }
  CmMessage a = offer(CmKind::Accept, *l);
  p->link = std::move(l);
  ++connecting_;
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
    if (r == RejectReason::None &&
        (m.src_rank != p.rank || m.dst_rank != rank_ || (job_key_ && m.job_key != job_key_))) {
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
  --connecting_;
  l->attrs = attrs;
  l->sq.open(attrs.max_send_wr, kMaxSignalInterval);
  l->state.set_open(inline_eager_below(*l));
  ++stats_.connections;
  if (!stats_.min_read_depth || attrs.initiator_depth < stats_.min_read_depth)
    stats_.min_read_depth = attrs.initiator_depth;
  RDMX_LOG(LogLevel::Info, rank_,
           "connected to rank %d (%s): initiator depth %u, responder resources %u, inline %u, "
           "credits %u, eager limit %llu",
           p.rank, l->active ? "active" : "passive", attrs.initiator_depth,
           attrs.responder_resources, attrs.max_inline, l->credits.available(),
           static_cast<unsigned long long>(l->eager_limit));
  if (l->active) {
    // The active side speaks first (iWARP requires it; every device accepts it).
    wire::Header h{};
    h.version_type = wire::Header::make_vt(wire::Type::Hello);
    h.source = rank_;
    if (!post(*l, h, nullptr, 0, nullptr, 0, false)) return;
  }
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
  if (r == RejectReason::None && m.reason == RejectReason::Duplicate) {
    // Lost a simultaneous connect; the peer's connection to us carries the traffic.
    if (l->peer->link.get() == l) retire(std::move(l->peer->link));
    return;
  }
  fail_link(*l, RDMX_ERR_REJECTED,
            "rank " + std::to_string(l->peer->rank) + " rejected the connection: " + text);
}

template <fabric::Fabric F>
void Engine<F>::retire(std::unique_ptr<Link<F>> l) {
  if (!l) return;
  if (l->state.connecting()) --connecting_;
  l->state.set_closed();
  graveyard_.push_back(std::move(l));
}

template <fabric::Fabric F>
void Engine<F>::check_connect_timeouts() {
  auto now = std::chrono::steady_clock::now();
  auto limit = std::chrono::milliseconds(settings_.connect_timeout_ms);
  for (auto& p : peers_) {
    Link<F>* l = p.link.get();
    if (l && l->state.connecting() && now - l->started > limit)
      fail_link(*l, RDMX_ERR_TIMEOUT,
                "connecting to rank " + std::to_string(p.rank) + " timed out after " +
                    std::to_string(settings_.connect_timeout_ms) + " ms (RDMX_CONNECT_TIMEOUT_MS)");
  }
}

}  // namespace rdmx::engine
