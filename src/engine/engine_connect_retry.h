// Connection attempts over time: attempts put off (the waves of a rank's first connects,
// kMaxDialing), refusals asked again after a backoff, and each attempt's time limit
// (RDMX_CONNECT_TIMEOUT_MS), checked from progress.
#pragma once

#include <algorithm>
#include <chrono>

#include "engine/engine.h"
#include "protocol/connect_msg.h"

namespace rdmx::engine {

using protocol::RejectReason;

// p is connected again at `at`, from progress (check_connect_timeouts), outside the
// fabric's callback this may be called from; the attempt's time limit counts from
// `started`.
template <fabric::Fabric F>
void Engine<F>::connect_later(Peer<F>& p, std::chrono::steady_clock::time_point at,
                              std::chrono::steady_clock::time_point started) {
  ConnectHistory& h = p.connect_history();
  if (h.retry_pending) return;
  h.retry_pending = true;
  h.retry_at = at;
  next_retry_ = std::min(next_retry_, at);
  h.retry_started = started;
  ++tick_.connecting;
}

// A refusal that a later attempt may not meet: the peer has no job secret yet (asked
// again shortly), or no resources for the connection (its descriptors, queue pairs or
// memory ran out, as in a connect storm): asked again after a backoff that doubles
// with each refusal in a row, jittered so that the refused ranks do not come back
// together. Either within the attempt's time limit; true if l was retired for it.
template <fabric::Fabric F>
bool Engine<F>::retry_refused(Link<F>& l, RejectReason reason) {
  if (reason != RejectReason::NotReady && reason != RejectReason::Resources) return false;
  Peer<F>& p = *l.peer;
  auto now = std::chrono::steady_clock::now();
  auto limit = std::chrono::milliseconds(settings_.connect_timeout_ms);
  if (p.link.get() != &l || now - l.started >= limit) return false;
  auto wait = std::chrono::milliseconds(20);
  if (reason == RejectReason::Resources) {
    wait = backoff(p.connect_history().refusals++);
    ++stats_.connect_retries;
    RDMX_LOG(LogLevel::Info, rank_,
             "rank %d has no resources for a connection now: asking again in %lld ms", p.rank,
             static_cast<long long>(wait.count()));
  }
  if (now + wait - l.started >= limit) return false;
  auto started = l.started;
  retire(std::move(p.link));
  connect_later(p, now + wait, started);
  return true;
}

// 10 ms after the first refusal, doubling up to 1 s, each between half and one and a
// half times that.
template <fabric::Fabric F>
std::chrono::milliseconds Engine<F>::backoff(uint32_t refusals) {
  uint64_t base = uint64_t(10) << std::min(refusals, 7u);
  base = std::min<uint64_t>(base, 1000);
  jitter_ += 0x9E3779B97F4A7C15ull;  // splitmix64
  uint64_t z = jitter_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return std::chrono::milliseconds(base / 2 + z % (base + 1));
}

// l is no longer being connected: established, failed or retired.
template <fabric::Fabric F>
void Engine<F>::left_connecting(Link<F>& l) {
  --tick_.connecting;
  // A slot for a connect that waited for one: started at the next progress call, not
  // up to 64 calls later (among oversubscribed ranks, many seconds).
  if (l.active && dialing_-- == kMaxDialing) upkeep_poll_.force();
}

template <fabric::Fabric F>
void Engine<F>::retire(std::unique_ptr<Link<F>> l) {
  if (!l) return;
  note_gone(*l);
  if (l->state.connecting()) left_connecting(*l);
  l->state.set_closed();
  bury(std::move(l));
}

template <fabric::Fabric F>
void Engine<F>::check_connect_timeouts() {
  auto now = std::chrono::steady_clock::now();
  if (!key_ready_ &&
      now - secret_wait_started_ > std::chrono::milliseconds(settings_.connect_timeout_ms))
    expire_secret_wait();
  // Peers that had no job secret yet when asked: ask again, within the same time limit.
  // Those waiting for a connect in flight to end are started when one does (an event
  // wakes a sleeping caller), the others when their time comes.
  next_retry_ = std::chrono::steady_clock::time_point::max();
  for (auto& p : peers_) {
    ConnectHistory* h = p.history.get();
    if (!h || !h->retry_pending) continue;
    if (now < h->retry_at) {
      next_retry_ = std::min(next_retry_, h->retry_at);
      continue;
    }
    if (dialing_ >= kMaxDialing && !p.link && !p.failed && !p.backlog.empty()) continue;
    h->retry_pending = false;
    --tick_.connecting;
    if (p.link || p.failed || p.backlog.empty()) continue;
    bool waited = h->dial_wait;
    h->dial_wait = false;
    connect_peer(p);
    if (p.link && !waited) p.link->started = h->retry_started;
  }
  auto limit = std::chrono::milliseconds(settings_.connect_timeout_ms);
  auto expired = [&](const Peer<F>& p) {
    return p.link && p.link->state.connecting() && now - p.link->started > limit;
  };
  if (std::none_of(peers_.begin(), peers_.end(), expired)) return;
  // This check may be the first thing a rank does after seconds without the processor
  // (oversubscribed ranks): the answers that came meanwhile are taken first, and only a
  // handshake still unanswered then is judged.
  fabric_.progress(*this);
  for (auto& p : peers_) {
    Link<F>* l = p.link.get();
    if (expired(p)) {
      uint32_t refusals = p.history ? p.history->refusals : 0;
      fail_link(*l, RDMX_ERR_TIMEOUT,
                "connecting to rank " + std::to_string(p.rank) + " timed out after " +
                    std::to_string(settings_.connect_timeout_ms) + " ms (RDMX_CONNECT_TIMEOUT_MS)" +
                    (refusals ? ", after " + std::to_string(refusals) +
                                    " refusals: the peer ran out of resources for a new connection"
                              : std::string()));
    }
  }
}

}  // namespace rdmx::engine
