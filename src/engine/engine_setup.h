// Engine setup, progress and teardown.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/job_secret.h"
#include "core/log.h"
#include "engine/engine.h"
#include "engine/engine_close.h"
#include "topology/numa_memory.h"

namespace rdmx::engine {

template <fabric::Fabric F>
int Engine<F>::init(int32_t rank, int32_t size, uint64_t job_key, const Settings& s,
                    std::string& err) {
  if (size < 1 || rank < 0 || rank >= size) {
    err = "rank " + std::to_string(rank) + " of size " + std::to_string(size) +
          " is not valid: need size >= 1 and 0 <= rank < size";
    return RDMX_ERR_INVALID;
  }
  rank_ = rank;
  size_ = size;
  job_key_ = job_key;
  settings_ = s;
  // Each rank's backoffs differ (engine_connect.h, backoff()).
  jitter_ =
      uint64_t(rank) << 32 ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  // How connections prove membership (connect_msg.h): the job secret, or the job key.
  mac_key_ = protocol::job_key_mac_key(job_key);
  if (!s.job_secret.empty() && s.auth != "job-key") {
    std::vector<uint8_t> secret = secret_from_hex(s.job_secret);
    mac_key_ = protocol::secret_mac_key(secret.data(), secret.size());
  } else if (s.auth == "secret" && s.job_secret.empty()) {
    key_ready_ = false;  // rdmx_set_job_secret gives it
    secret_wait_started_ = std::chrono::steady_clock::now();
  }
  set_log_level(int(s.verbose));
  max_links_ = s.max_connections < 0 ? default_max_connections() : uint32_t(s.max_connections);
  peers_.resize(size_t(size));
  for (int32_t i = 0; i < size; ++i) peers_[size_t(i)].rank = i;
  // RDMX_SRQ=-1: one shared receive pool in a job of more than kSharedReceiveRanks ranks,
  // where the fabric has one; a fabric that turns out to have none goes without.
  if (settings_.srq < 0) {
    settings_.srq = kHasSharedReceive && size > kSharedReceiveRanks;
    settings_.srq_auto = settings_.srq != 0;
  }
  if (settings_.srq) {
    if constexpr (kHasSharedReceive) {
      fabric_.enable_shared_receive();
    } else {
      err = std::string("RDMX_SRQ=1 is not supported by the ") + F::kName + " fabric";
      return RDMX_ERR_UNSUPPORTED;
    }
  }
  int rc = fabric_.open(settings_, rank, err);
  if (rc) return rc;
  if constexpr (requires { fabric_.shared_receive_depth(); })
    if (settings_.srq_auto && fabric_.shared_receive_depth() == 0) settings_.srq = 0;
  // The registration cache is safe by default only where a stale registration is
  // harmless: the fabric reads by virtual address when the read happens.
  bool pins = true;
  if constexpr (requires { fabric_.pins_memory(); }) pins = fabric_.pins_memory();
  rcache_.init(fabric_, s.rcache == "on" || (s.rcache == "auto" && !pins), s.rcache_size, &stats_);
  // Bounce buffers (and a shared receive queue's) hold the largest eager message of any
  // link.
  max_eager_limit_ = s.eager_limit >= 0 ? uint64_t(s.eager_limit) : fabric::kDefaultEagerLimit;
  if constexpr (requires { fabric_.max_eager_limit(); })
    if (s.eager_limit < 0) max_eager_limit_ = fabric_.max_eager_limit();
  recv_buf_size_ = buffer_size(max_eager_limit_);
  if (settings_.srq && (rc = setup_shared_receive(err))) return rc;

  constexpr uint32_t kBounce = 256;
  bounce_mem_ = topology::alloc_local(size_t(kBounce) * recv_buf_size_);
  if (!bounce_mem_) {
    err = "out of memory for send buffers";
    return RDMX_ERR_NO_MEMORY;
  }
  rc = bounce_reg_.reg(fabric_, bounce_mem_.get(), size_t(kBounce) * recv_buf_size_,
                       fabric::kLocalWrite, err);
  if (rc) return rc;
  for (uint32_t i = kBounce; i-- > 0;) bounce_free_.push_back(i);
  bounce_owner_.assign(kBounce, nullptr);
  return RDMX_OK;
}

template <fabric::Fabric F>
int Engine<F>::add_peer(int32_t rank, const void* addr, size_t len) {
  if (rank < 0 || rank >= size_)
    return error(RDMX_ERR_INVALID, "add_peer: rank " + std::to_string(rank) + " is outside 0.." +
                                       std::to_string(size_ - 1));
  if (!addr || len == 0 || len > 4096)
    return error(RDMX_ERR_INVALID, "add_peer: an address of " + std::to_string(len) +
                                       " bytes for rank " + std::to_string(rank) +
                                       " (1..4096 accepted)");
  auto* b = static_cast<const uint8_t*>(addr);
  peers_[size_t(rank)].address.assign(b, b + len);
  return RDMX_OK;
}

template <fabric::Fabric F>
inline int Engine<F>::progress() {
  if (tick_due() && upkeep_poll_.due()) [[unlikely]] {
    if (tick_.connecting) check_connect_timeouts();
    if (refused_links_) check_refusals();
    if (closing_ || over_cap()) check_closes();
    if (burying_) release_buried();
  }
  return fabric_.progress(*this);  // last: a tail call
}

template <fabric::Fabric F>
void Engine<F>::finalize() {
  // Let sends already handed to the fabric finish (bounded), so that a message sent
  // just before finalize is not cut off with the connection.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    bool busy = false;
    for (auto& p : peers_) {
      Link<F>* l = p.link.get();
      if (l && l->state.open() && (l->sq.used() > 0 || (!p.backlog.empty() && !p.failed))) {
        busy = true;
        if (l->sq.only_unsignaled() && p.backlog.empty()) flush_unsignaled(*l);
      }
    }
    if (!busy || std::chrono::steady_clock::now() > deadline) break;
    progress();
  }
  for (auto& p : peers_) {
    if (p.link && !p.link->state.closed()) {
      p.link->state.set_closed();
      fabric_.disconnect(p.link->conn);
    }
  }
}

template <fabric::Fabric F>
Engine<F>::~Engine() {
  // The registrations go while the fabric is still there (it is destroyed first).
  for (auto& p : peers_)
    if (p.link) p.link->recv_reg.reset();
  for (auto& l : graveyard_) l->recv_reg.reset();
  bounce_reg_.reset();
  shared_.reset();
  rcache_.clear();
}

template <fabric::Fabric F>
int Engine<F>::error(int code, const std::string& what) {
  last_error_ = what;
  RDMX_LOG(LogLevel::Error, rank_, "%s", what.c_str());
  return code;
}

}  // namespace rdmx::engine
