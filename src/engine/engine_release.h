// Giving back what an ended connection holds. A link that was closed by agreement, or
// that lost a simultaneous connect, is buried: kept in the graveyard until its fabric
// connection is settled (it has ended, and the fabric has reported everything it will
// for it), then its receive buffers are deregistered and freed and the connection is
// released to the fabric (queue pair, socket, segments). A rank that closes and reopens
// connections past RDMX_MAX_CONNECTIONS thereby holds what its live connections need,
// not one set per connection ever made. A link that failed stays until finalize: what
// failed it may still be reporting, and failures are rare.
#pragma once

#include <utility>

#include "engine/engine.h"

namespace rdmx::engine {

// l (already closed, or ending) goes to the graveyard, to be released once settled.
template <fabric::Fabric F>
void Engine<F>::bury(std::unique_ptr<Link<F>> l) {
  if constexpr (kReleasesConns) {
    l->buried = true;
    ++burying_;
    update_upkeep();
  }
  graveyard_.push_back(std::move(l));
}

// Releases the buried links whose connection has settled.
template <fabric::Fabric F>
void Engine<F>::release_buried() {
  if constexpr (kReleasesConns) {
    for (size_t i = 0; i < graveyard_.size();) {
      Link<F>& l = *graveyard_[i];
      if (!l.buried || (l.conn && !fabric_.settled(l.conn))) {
        ++i;
        continue;
      }
      l.recv_reg.reset();
      if (l.conn) fabric_.release(l.conn);
      receive_bytes_ -= l.receive_bytes();
      graveyard_[i] = std::move(graveyard_.back());
      graveyard_.pop_back();
      --burying_;
    }
    update_upkeep();
  }
}

}  // namespace rdmx::engine
