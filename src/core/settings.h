// The values of every RDMX_* setting for one context. Each setting is declared once,
// by the part of rdmx that reads it (core/setting_decl.h); this is where the values are
// kept, filled from the declared defaults, then the environment, then the caller's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdmx {

struct Settings {
  std::string fabric;            // RDMX_FABRIC
  std::string ofi_provider;      // RDMX_OFI_PROVIDER ("" = tcp, or verbs where asked)
  int64_t eager_limit;           // RDMX_EAGER_LIMIT (-1 = the fabric's)
  int64_t midsize_limit;         // RDMX_MIDSIZE_LIMIT (-1 = the fabric's)
  int64_t rndv_chunk;            // RDMX_RNDV_CHUNK (-1 = the fabric's)
  int64_t credits;               // RDMX_CREDITS (-1 = the fabric's)
  uint64_t unexpected_limit;     // RDMX_UNEXPECTED_LIMIT (bytes; 0 = no bound)
  uint64_t max_rd_atomic;        // RDMX_MAX_RD_ATOMIC
  uint64_t retry_count;          // RDMX_RETRY_COUNT
  int64_t rnr_retry;             // RDMX_RNR_RETRY (-1 = auto)
  uint64_t flow_control;         // RDMX_FLOW_CONTROL
  int64_t srq;                   // RDMX_SRQ (-1 = by the job's size; see srq_auto)
  std::string verbs_device;      // RDMX_VERBS_DEVICE (device name or IP; "" = nearest)
  int64_t local_rank;            // RDMX_LOCAL_RANK (-1: unset, ask the launcher's variables)
  uint64_t connect_timeout_ms;   // RDMX_CONNECT_TIMEOUT_MS
  int64_t max_connections;       // RDMX_MAX_CONNECTIONS (-1 = from RLIMIT_NOFILE)
  uint64_t verbose;              // RDMX_VERBOSE
  std::string auth;              // RDMX_AUTH: auto|job-key|secret
  std::string job_secret;        // RDMX_JOB_SECRET (hex), secret
  std::string idle;              // RDMX_IDLE: sleep|spin
  std::string rcache;            // RDMX_RCACHE: auto|on|off
  uint64_t rcache_size;          // RDMX_RCACHE_SIZE (bytes)
  uint64_t loopback_rd_atom;     // RDMX_LOOPBACK_DEVICE_RD_ATOM
  uint64_t loopback_max_inline;  // RDMX_LOOPBACK_MAX_INLINE
  uint64_t loopback_in_place;    // RDMX_LOOPBACK_SEND_IN_PLACE
  uint64_t loopback_unbuffered;  // RDMX_LOOPBACK_SMALL_UNBUFFERED
  std::string shm;               // RDMX_SHM: auto|on|off
  std::string shm_read;          // RDMX_SHM_READ: auto|cma|copy
  std::string shm_domain;        // RDMX_SHM_DOMAIN
  uint64_t shm_split_read;       // RDMX_SHM_SPLIT_READ (bytes; 0 = never)
  int64_t rank;                  // RDMX_RANK (-1: unset), for rdmx_init_bootstrap
  int64_t size;                  // RDMX_SIZE (-1: unset)
  std::string bootstrap;         // RDMX_BOOTSTRAP, host:port where rank 0 listens
  uint64_t bootstrap_wait_ms;    // RDMX_BOOTSTRAP_TIMEOUT_MS
  std::string bootstrap_method;  // RDMX_BOOTSTRAP_METHOD: auto|pmix|socket
  // Not a setting: the engine turned RDMX_SRQ=-1 into 1 for a large job (engine_setup.h);
  // a fabric that cannot share its receives then goes without, instead of failing.
  bool srq_auto = false;

  // Every setting at its declared default.
  Settings();

  // Reads every RDMX_* variable from the environment over the current values. Returns
  // false and fills err with "RDMX_X='v' is not accepted: ..." on the first invalid
  // value. Warns (once per name and process) of an RDMX_* variable that looks like a
  // misspelt setting.
  bool load_from_env(std::string& err);
  // Sets one setting by its variable name, with the same validation.
  bool set(const std::string& name, const std::string& value, std::string& err);

  // RNR retry count actually used: with per-connection credits RNR cannot happen,
  // so 0 turns a credit bug into an error; a shared receive queue can run dry, so 7.
  uint8_t effective_rnr_retry() const {
    return rnr_retry >= 0 ? uint8_t(rnr_retry) : (srq > 0 ? 7 : 0);
  }
};

// For each "NAME=value" in env whose NAME starts with RDMX_, is no declared setting and
// is a likely misspelling of one (within three edits, or one name a prefix of the
// other): "NAME is not an rdmx setting; did you mean RDMX_X?". Names further from every
// setting are taken for another program's (the test tiers use RDMX_VM_*, RDMX_BUILDDIR).
std::vector<std::string> misspelt_settings(const char* const* env);

}  // namespace rdmx
