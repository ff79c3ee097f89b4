// The public C API: argument checks, fabric selection at init, and a try/catch at
// every entry so that no exception crosses into C callers.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "api/context.h"
#include "api/settings_object.h"
#include "core/log.h"
#include "core/mem_release.h"
#include "core/settings.h"
#include "engine/request.h"
#include "rdmx/rdmx.h"

struct rdmx_context {
  std::unique_ptr<rdmx::Context> impl;
  std::function<void()> at_finalize;  // after impl's finalize: a launcher's session
};

// context_id took the padding after error: a status is the size it was, and a caller
// built against the earlier header still gets all it asks for.
static_assert(sizeof(rdmx_status_info_t) == 32 && offsetof(rdmx_status_info_t, context_id) == 28);

namespace {

thread_local std::string t_init_error;

int init_failed(int code, const std::string& why) {
  t_init_error = why;
  rdmx::log_message(rdmx::LogLevel::Error, -1, "rdmx_init: %s", why.c_str());
  return code;
}

std::unique_ptr<rdmx::Context> make_context(const rdmx::Settings& s, std::string& why) {
  std::string name = s.fabric;
  // Peers on this host go through shared memory unless told otherwise (a shared receive
  // pool is the network fabric's: shared memory keeps its own per-peer queues).
  bool with_shm = s.shm == "on" || s.shm == "auto";
  if (name == "auto") {
    name = rdmx::resolve_auto_fabric(why);
    if (name.empty()) return nullptr;
  }
  std::unique_ptr<rdmx::Context> c;
  if (name == "loopback") c = rdmx::make_loopback_context();
  if (name == "verbs") c = rdmx::make_verbs_context(with_shm);
  if (name == "ofi") c = rdmx::make_ofi_context(with_shm);
  if (name == "shm") c = rdmx::make_shm_context();
  if (!c) why = "the " + name + " fabric is not built into this rdmx (see ./configure's summary)";
  return c;
}

template <class Fn>
int guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return RDMX_ERR_NO_MEMORY;
  } catch (...) {
    return RDMX_ERR_FABRIC;
  }
}

}  // namespace

std::vector<uint8_t> rdmx::address_of(rdmx_context_t* ctx) {
  std::vector<uint8_t> a(ctx->impl->address(nullptr, 0));
  ctx->impl->address(a.data(), a.size());
  return a;
}

void rdmx::at_finalize(rdmx_context_t* ctx, std::function<void()> fn) {
  ctx->at_finalize = std::move(fn);
}

int rdmx::report_init_failure(int code, const std::string& why) { return init_failed(code, why); }

void rdmx::remember_init_error(const std::string& why) { t_init_error = why; }

extern "C" {

int rdmx_init(const rdmx_init_params_t* params, rdmx_context_t** out) {
  return guarded([&]() -> int {
    if (!params || !out) return init_failed(RDMX_ERR_INVALID, "params and ctx must not be NULL");
    *out = nullptr;
    rdmx::Settings s;
    std::string err;
    if (!s.load_from_env(err)) return init_failed(RDMX_ERR_INVALID, err);
    if (params->settings && !params->settings->apply_to(s, err))
      return init_failed(RDMX_ERR_INVALID, err);
    if (params->fabric && !s.set("RDMX_FABRIC", params->fabric, err))
      return init_failed(RDMX_ERR_INVALID, err);
    auto ctx = std::make_unique<rdmx_context>();
    ctx->impl = make_context(s, err);
    if (!ctx->impl) return init_failed(RDMX_ERR_NO_DEVICE, err);
    int rc = ctx->impl->init(params->rank, params->size, params->job_key, s, err);
    if (rc) return init_failed(rc, err);
    *out = ctx.release();
    return RDMX_OK;
  });
}

int rdmx_finalize(rdmx_context_t* ctx) {
  if (!ctx) return RDMX_ERR_INVALID;
  int rc = guarded([&]() -> int {
    ctx->impl->finalize();
    return RDMX_OK;
  });
  auto then = std::move(ctx->at_finalize);
  delete ctx;
  if (then) then();
  return rc;
}

int rdmx_address(rdmx_context_t* ctx, void* buf, size_t* len) {
  if (!ctx || !len) return RDMX_ERR_INVALID;
  size_t need = ctx->impl->address(nullptr, 0);
  if (!buf || *len < need) {
    *len = need;
    return buf ? RDMX_ERR_INVALID : RDMX_OK;
  }
  *len = ctx->impl->address(static_cast<uint8_t*>(buf), *len);
  return RDMX_OK;
}

int rdmx_add_peer(rdmx_context_t* ctx, int32_t rank, const void* addr, size_t len) {
  if (!ctx) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->add_peer(rank, addr, len); });
}

int rdmx_isend(rdmx_context_t* ctx, int32_t dest, uint32_t cid, int32_t tag, const void* buf,
               uint64_t len, uint32_t flags, rdmx_completion_fn cb, void* user,
               rdmx_request_t** req) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded(
      [&]() -> int { return ctx->impl->isend(dest, cid, tag, buf, len, flags, cb, user, req); });
}

int rdmx_irecv(rdmx_context_t* ctx, int32_t source, uint32_t cid, int32_t tag, void* buf,
               uint64_t len, rdmx_completion_fn cb, void* user, rdmx_request_t** req) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded(
      [&]() -> int { return ctx->impl->irecv(source, cid, tag, buf, len, cb, user, req); });
}

int rdmx_iprobe(rdmx_context_t* ctx, int32_t source, uint32_t cid, int32_t tag, int* found,
                rdmx_status_info_t* status) {
  if (!ctx || !found) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->iprobe(source, cid, tag, found, status); });
}

int rdmx_improbe(rdmx_context_t* ctx, int32_t source, uint32_t cid, int32_t tag, int* found,
                 rdmx_message_t** msg, rdmx_status_info_t* status) {
  if (!ctx || !found || !msg) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->improbe(source, cid, tag, found, msg, status); });
}

int rdmx_isend_tagged(rdmx_context_t* ctx, int32_t dest, uint64_t tag, const void* buf,
                      uint64_t len, uint32_t flags, rdmx_completion_fn cb, void* user,
                      rdmx_request_t** req) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded(
      [&]() -> int { return ctx->impl->isend_tagged(dest, tag, buf, len, flags, cb, user, req); });
}

int rdmx_irecv_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore, void* buf,
                      uint64_t len, rdmx_completion_fn cb, void* user, rdmx_request_t** req) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded([&]() -> int {
    return ctx->impl->irecv_tagged(source, tag, ignore, buf, len, cb, user, req);
  });
}

int rdmx_iprobe_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore,
                       int* found, rdmx_status_info_t* status) {
  if (!ctx || !found) return RDMX_ERR_INVALID;
  return guarded([&]() -> int {
    return ctx->impl->probe_tagged(source, tag, ignore, found, nullptr, status);
  });
}

int rdmx_improbe_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore,
                        int* found, rdmx_message_t** msg, rdmx_status_info_t* status) {
  if (!ctx || !found || !msg) return RDMX_ERR_INVALID;
  return guarded(
      [&]() -> int { return ctx->impl->probe_tagged(source, tag, ignore, found, msg, status); });
}

int rdmx_imrecv(rdmx_context_t* ctx, rdmx_message_t* msg, void* buf, uint64_t len,
                rdmx_completion_fn cb, void* user, rdmx_request_t** req) {
  if (!ctx || !msg || !req) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->imrecv(msg, buf, len, cb, user, req); });
}

int rdmx_cancel(rdmx_context_t* ctx, rdmx_request_t* req) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->cancel(req); });
}

int rdmx_test(rdmx_request_t* req, int* done, rdmx_status_info_t* status) {
  if (!req || !done) return RDMX_ERR_INVALID;
  auto* r = rdmx::engine::RequestBase::from(req);
  *done = r->state == rdmx::engine::RequestBase::State::Done;
  if (*done && status) *status = r->status;
  return RDMX_OK;
}

int rdmx_wait(rdmx_context_t* ctx, rdmx_request_t* req, int timeout_ms,
              rdmx_status_info_t* status) {
  if (!ctx || !req) return RDMX_ERR_INVALID;
  return guarded([&]() -> int {
    using Clock = std::chrono::steady_clock;
    // Poll while there is work; sleep on the fabric once it has been idle this long.
    constexpr auto kSpin = std::chrono::microseconds(50);
    constexpr int kMaxSleepMs = 100;  // a sleep ends at least this often
    auto now = Clock::now();
    auto deadline = now + std::chrono::milliseconds(timeout_ms);
    auto idle_since = now;
    bool may_sleep = ctx->impl->sleeps_when_idle();
    int done = 0;
    for (uint32_t idle = 0;;) {
      rdmx_test(req, &done, status);
      if (done) return RDMX_OK;
      int rc = ctx->impl->progress();
      if (rc < 0) return rc;
      if (rc > 0) {
        idle = 0;
        continue;
      }
      if ((idle++ & 15) != 0) continue;  // look at the clock every 16 idle polls
      now = Clock::now();
      if (idle == 1) idle_since = now;
      if (timeout_ms >= 0 && now > deadline) return RDMX_ERR_TIMEOUT;
      if (!may_sleep || now - idle_since < kSpin) continue;
      int sleep_ms = kMaxSleepMs;
      if (timeout_ms >= 0)
        sleep_ms = int(std::min<int64_t>(
            kMaxSleepMs,
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
      if ((rc = ctx->impl->wait_event(sleep_ms)) != RDMX_OK) return rc;
    }
  });
}

int rdmx_wait_event(rdmx_context_t* ctx, int timeout_ms) {
  if (!ctx || timeout_ms < 0) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->wait_event(timeout_ms); });
}

void rdmx_request_free(rdmx_context_t* ctx, rdmx_request_t* req) {
  if (ctx && req) ctx->impl->release(req);
}

int rdmx_progress(rdmx_context_t* ctx) {
  if (!ctx) return RDMX_ERR_INVALID;
  return guarded([&]() -> int { return ctx->impl->progress(); });
}

int rdmx_set_request_release(rdmx_context_t* ctx, int rule) {
  if (!ctx) return RDMX_ERR_INVALID;
  return ctx->impl->set_request_release(rule);
}

int rdmx_get_stats(rdmx_context_t* ctx, rdmx_stats_t* stats) {
  if (!ctx || !stats) return RDMX_ERR_INVALID;
  *stats = ctx->impl->stats();
  return RDMX_OK;
}

void rdmx_memory_released(const void* addr, size_t len) { rdmx::core::ReleaseLog::note(addr, len); }

int32_t rdmx_context_rank(rdmx_context_t* ctx) { return ctx ? ctx->impl->rank() : -1; }

int32_t rdmx_context_size(rdmx_context_t* ctx) { return ctx ? ctx->impl->size() : 0; }

const char* rdmx_fabric_name(rdmx_context_t* ctx) { return ctx ? ctx->impl->fabric_name() : ""; }

int rdmx_set_job_secret(rdmx_context_t* ctx, const void* secret, size_t len) {
  if (!ctx) return RDMX_ERR_INVALID;
  return guarded(
      [&]() -> int { return ctx->impl->set_job_secret(static_cast<const uint8_t*>(secret), len); });
}

const char* rdmx_peer_fabric(rdmx_context_t* ctx, int32_t rank) {
  return ctx ? ctx->impl->peer_fabric(rank) : "";
}

const char* rdmx_last_error(rdmx_context_t* ctx) {
  return ctx ? ctx->impl->last_error().c_str() : t_init_error.c_str();
}

const char* rdmx_strerror(int status) {
  switch (status) {
    case RDMX_OK: return "success";
    case RDMX_ERR_INVALID: return "invalid argument or setting";
    case RDMX_ERR_NO_MEMORY: return "out of memory or registration failed";
    case RDMX_ERR_NO_DEVICE: return "fabric not available";
    case RDMX_ERR_UNREACHABLE: return "peer unreachable";
    case RDMX_ERR_REJECTED: return "connection rejected by the peer";
    case RDMX_ERR_PEER_LOST: return "connection to the peer lost";
    case RDMX_ERR_TRUNCATED: return "message truncated";
    case RDMX_ERR_CANCELLED: return "request cancelled";
    case RDMX_ERR_TIMEOUT: return "timed out";
    case RDMX_ERR_AGAIN: return "resource temporarily unavailable";
    case RDMX_ERR_PROTOCOL: return "protocol error from the peer";
    case RDMX_ERR_FABRIC: return "fabric error";
    case RDMX_ERR_UNSUPPORTED: return "not supported";
  }
  return "unknown rdmx status";
}

}  // extern "C"
