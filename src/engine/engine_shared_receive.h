// The shared receive pool (RDMX_SRQ): one set of receive buffers for every connection,
// posted at start-up, each posted again as soon as its message is handled, and grown
// while the fabric reports it running low.
#pragma once

#include <algorithm>
#include <string>

#include "core/log.h"
#include "engine/engine.h"

namespace rdmx::engine {

// Memory grows with the pool, not with the number of peers. Flow control is then the
// fabric's: RNR retry over verbs, the socket's own over tcp. Four windows of buffers, at
// most kMaxSharedPoolBytes of them (32 MiB: 256 of tcp's 128 KiB buffers would be just
// over), at least kMinSharedPool. A fabric that can report the pool running low (verbs:
// the shared receive queue's limit event) lets it grow a chunk of that size at a time
// up to kMaxSharedPoolBytes (4,096 of verbs' 8 KiB buffers, as MVAPICH2 grows its SRQ
// from 256 to 4,096) or the queue's depth.
template <fabric::Fabric F>
int Engine<F>::setup_shared_receive(std::string& err) {
  constexpr uint64_t kMaxSharedPoolBytes = 32ull << 20;
  constexpr uint32_t kMinSharedPool = 64;
  uint64_t most = std::max<uint64_t>(kMinSharedPool, kMaxSharedPoolBytes / recv_buf_size_);
  uint32_t n = uint32_t(std::min<uint64_t>(fabric::max_credits(settings_) * 4, most));
  if constexpr (requires { fabric_.shared_receive_depth(); }) {
    n = std::min(n, fabric_.shared_receive_depth());
    most = std::min<uint64_t>(most, fabric_.shared_receive_depth());
  }
  if (int rc = shared_.init(fabric_, n, recv_buf_size_, uint32_t(most), err)) return rc;
  for (uint32_t i = 0; i < n; ++i)
    if (int rc = post_shared(i)) {
      err = std::string("posting shared receive buffers failed: ") + rdmx_strerror(rc);
      return rc;
    }
  arm_shared_receive_limit();
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::post_shared(uint64_t index) {
  if constexpr (kHasSharedReceive)
    return fabric_.post_shared_recv(shared_.buffer(index), recv_buf_size_, shared_.region(index),
                                    wr_id(kWrShared, index));
  return RDMX_ERR_UNSUPPORTED;
}

// Asks the fabric to report when fewer than a quarter of the pool's buffers are posted:
// the receiver is that far behind its senders, whose messages then wait for a buffer
// (RNR retry). Not while the pool is at its bound.
template <fabric::Fabric F>
void Engine<F>::arm_shared_receive_limit() {
  if constexpr (requires { fabric_.arm_shared_receive_limit(uint32_t{}); }) {
    if (shared_.count() + shared_.chunk_buffers() > shared_.max()) return;
    if (int rc = fabric_.arm_shared_receive_limit(std::max(1u, shared_.count() / 4)))
      RDMX_LOG(LogLevel::Info, rank_,
               "the shared receive pool will not grow: its low-water event cannot be set (%s)",
               rdmx_strerror(rc));
  }
}

// One more chunk of buffers, posted at once; the event is set again for the larger pool.
template <fabric::Fabric F>
void Engine<F>::on_shared_receive_low() {
  uint32_t first = shared_.count();
  std::string err;
  if (int rc = shared_.grow(fabric_, err)) {
    if (rc != RDMX_ERR_AGAIN)
      RDMX_LOG(LogLevel::Warn, rank_, "the shared receive pool could not grow: %s", err.c_str());
    return;
  }
  for (uint32_t i = first; i < shared_.count(); ++i)
    if (int rc = post_shared(i)) {
      error(rc, std::string("posting shared receive buffers failed: ") + rdmx_strerror(rc));
      return;
    }
  ++stats_.shared_receive_growths;
  RDMX_LOG(LogLevel::Info, rank_,
           "the shared receive pool ran low: grown to %u buffers (%llu bytes)", shared_.count(),
           static_cast<unsigned long long>(shared_.bytes()));
  arm_shared_receive_limit();
}

}  // namespace rdmx::engine
