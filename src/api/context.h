// What an rdmx_context_t is: one engine over the fabric chosen at rdmx_init. The
// choice is made once; every call on the context then goes straight to that engine.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/settings.h"
#include "rdmx/rdmx.h"

namespace rdmx {

class Context {
 public:
  virtual ~Context() = default;
  virtual int init(int32_t rank, int32_t size, uint64_t job_key, const Settings& s,
                   std::string& err) = 0;
  virtual size_t address(uint8_t* buf, size_t cap) const = 0;
  virtual int add_peer(int32_t rank, const void* addr, size_t len) = 0;
  virtual int isend(int32_t dest, uint32_t cid, int32_t tag, const void* buf, uint64_t len,
                    uint32_t flags, rdmx_completion_fn cb, void* user, rdmx_request_t** out) = 0;
  virtual int irecv(int32_t source, uint32_t cid, int32_t tag, void* buf, uint64_t len,
                    rdmx_completion_fn cb, void* user, rdmx_request_t** out) = 0;
  virtual int iprobe(int32_t source, uint32_t cid, int32_t tag, int* found,
                     rdmx_status_info_t* st) = 0;
  virtual int improbe(int32_t source, uint32_t cid, int32_t tag, int* found, rdmx_message_t** msg,
                      rdmx_status_info_t* st) = 0;
  virtual int isend_tagged(int32_t dest, uint64_t tag, const void* buf, uint64_t len,
                           uint32_t flags, rdmx_completion_fn cb, void* user,
                           rdmx_request_t** out) = 0;
  virtual int irecv_tagged(int32_t source, uint64_t tag, uint64_t ignore, void* buf, uint64_t len,
                           rdmx_completion_fn cb, void* user, rdmx_request_t** out) = 0;
  // msg null: a probe; else a matched probe.
  virtual int probe_tagged(int32_t source, uint64_t tag, uint64_t ignore, int* found,
                           rdmx_message_t** msg, rdmx_status_info_t* st) = 0;
  virtual int imrecv(rdmx_message_t* msg, void* buf, uint64_t len, rdmx_completion_fn cb,
                     void* user, rdmx_request_t** out) = 0;
  virtual int cancel(rdmx_request_t* r) = 0;
  virtual void release(rdmx_request_t* r) = 0;
  virtual int set_request_release(int rule) = 0;
  virtual int progress() = 0;
  virtual int wait_event(int timeout_ms) = 0;
  virtual bool sleeps_when_idle() const = 0;  // RDMX_IDLE=sleep
  virtual void finalize() = 0;
  virtual const rdmx_stats_t& stats() const = 0;
  virtual const std::string& last_error() const = 0;
  virtual const char* fabric_name() const = 0;
  virtual const char* peer_fabric(int32_t rank) const = 0;
  virtual int set_job_secret(const uint8_t* secret, size_t len) = 0;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
};

// One factory per backend built into this library (null where not built). with_shm: the
// network fabric joined by shared memory for peers on this host (composite/).
std::unique_ptr<Context> make_loopback_context();
std::unique_ptr<Context> make_verbs_context(bool with_shm = false);
std::unique_ptr<Context> make_ofi_context(bool with_shm = false);
std::unique_ptr<Context> make_shm_context();

// The RDMA devices ibv_get_device_list finds, in its order (none without verbs).
std::vector<std::string> rdma_device_names();

// The fabric RDMX_FABRIC=auto resolves to on this machine, or "" with a reason.
std::string resolve_auto_fabric(std::string& why);

// Records why an initialisation failed (for rdmx_last_error(NULL)), logs it, and
// returns code.
int report_init_failure(int code, const std::string& why);
// ctx's address blob, as rdmx_address gives it (for a bootstrap to hand around).
std::vector<uint8_t> address_of(rdmx_context_t* ctx);

// Runs fn when ctx is finalized, after its context (a launcher's session to end).
void at_finalize(rdmx_context_t* ctx, std::function<void()> fn);

// Records why a call failed, for rdmx_last_error(NULL), without logging it.
void remember_init_error(const std::string& why);

}  // namespace rdmx
