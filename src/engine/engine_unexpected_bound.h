// Unexpected messages within a bound (RDMX_UNEXPECTED_LIMIT). An eager message that
// arrives before its receive is copied aside; a receiver flooded by many senders would
// hold them without limit. Past the bound it asks each peer whose message went
// unexpected to send what is larger than wire::kThrottledEager by rendezvous: such a
// message then costs the receiver a record, not its payload, and the payload waits in
// the sender's memory until it is received. Once it holds half the bound again it tells
// them to stop.
//
// Withholding the peer's credits instead would bound the bytes exactly, but could stop
// a correct MPI program: a sender whose window is full of messages the receiver has
// not asked for yet could not send the one it waits for (MPI's progress rule). Here
// nothing waits: messages in flight when the peer hears the request still arrive
// eagerly, so the bound may be passed by what the senders' windows hold.
#pragma once

#include <cstring>
#include <string>

#include "core/log.h"
#include "engine/engine.h"

namespace rdmx::engine {

template <fabric::Fabric F>
inline void Engine<F>::hold_unexpected(Link<F>& l, uint64_t bytes) {
  unexpected_bytes_ += bytes;
  uint64_t limit = settings_.unexpected_limit;
  if (limit && unexpected_bytes_ > limit && !l.asked_peer_rendezvous) [[unlikely]]
    ask_rendezvous(l);
}

template <fabric::Fabric F>
inline void Engine<F>::drop_unexpected(uint64_t bytes) {
  unexpected_bytes_ -= bytes;
  if (!rendezvous_asked_.empty() && unexpected_bytes_ <= settings_.unexpected_limit / 2)
      [[unlikely]]
    stop_asking_rendezvous();
}

template <fabric::Fabric F>
void Engine<F>::ask_rendezvous(Link<F>& l) {
  if (!l.state.open()) return;  // closing: a new connection starts afresh
  RDMX_LOG(LogLevel::Info, rank_,
           "%llu bytes of unexpected messages held (RDMX_UNEXPECTED_LIMIT %llu): asking rank "
           "%d to send by rendezvous",
           static_cast<unsigned long long>(unexpected_bytes_),
           static_cast<unsigned long long>(settings_.unexpected_limit), l.peer->rank);
  l.asked_peer_rendezvous = true;
  rendezvous_asked_.push_back(l.peer->rank);
  ++stats_.rendezvous_asks;
  queue_control(*l.peer, wire::Type::Rendezvous, 1);
}

template <fabric::Fabric F>
void Engine<F>::stop_asking_rendezvous() {
  for (int32_t rank : rendezvous_asked_) {
    Peer<F>& p = peers_[size_t(rank)];
    if (!p.link || !p.link->asked_peer_rendezvous) continue;  // that connection is gone
    p.link->asked_peer_rendezvous = false;
    queue_control(p, wire::Type::Rendezvous, 0);
  }
  rendezvous_asked_.clear();
}

// The peer asks this side to send by rendezvous (1), or no longer (0).
template <fabric::Fabric F>
void Engine<F>::handle_rendezvous(Link<F>& l, const uint8_t* b, uint32_t len) {
  wire::ReqRef ref;
  if (!read_body(l, b, len, ref, "request to send by rendezvous")) return;
  if (ref.sender_request > 1) {
    fail_link(l, RDMX_ERR_PROTOCOL,
              "rank " + std::to_string(l.peer->rank) +
                  " asked for rendezvous with a value other than 0 or 1");
    return;
  }
  l.peer_asks_rendezvous = ref.sender_request == 1;
  l.state.set_inline_below(inline_eager_below(l));
}

}  // namespace rdmx::engine
