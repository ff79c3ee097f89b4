// Every RDMX_* knob, read and validated in one place.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace rdmx {

struct Settings {
  std::string fabric = "auto";          // RDMX_FABRIC
  std::string ofi_provider = "";        // RDMX_OFI_PROVIDER ("" = tcp, or verbs where asked)
  uint64_t eager_limit = 8192;          // RDMX_EAGER_LIMIT
  uint64_t rndv_chunk = 1 << 20;        // RDMX_RNDV_CHUNK
  uint64_t credits = 64;                // RDMX_CREDITS
  uint64_t max_rd_atomic = 16;          // RDMX_MAX_RD_ATOMIC
  uint64_t retry_count = 7;             // RDMX_RETRY_COUNT
  int64_t rnr_retry = -1;               // RDMX_RNR_RETRY (-1 = auto)
  uint64_t flow_control = 1;            // RDMX_FLOW_CONTROL
  uint64_t srq = 0;                     // RDMX_SRQ
  std::string verbs_device = "";        // RDMX_VERBS_DEVICE (device name or IP; "" = first)
  uint64_t connect_timeout_ms = 30000;  // RDMX_CONNECT_TIMEOUT_MS
  uint64_t verbose = 0;                 // RDMX_VERBOSE
  std::string idle = "sleep";           // RDMX_IDLE: sleep|spin
  uint64_t loopback_rd_atom = 16;       // RDMX_LOOPBACK_DEVICE_RD_ATOM
  uint64_t loopback_max_inline = 128;   // RDMX_LOOPBACK_MAX_INLINE
  int64_t rank = -1;                    // RDMX_RANK (-1: unset), for rdmx_init_bootstrap
  int64_t size = -1;                    // RDMX_SIZE (-1: unset)
  std::string bootstrap = "";           // RDMX_BOOTSTRAP, host:port where rank 0 listens
  uint64_t bootstrap_wait_ms = 30000;   // RDMX_BOOTSTRAP_TIMEOUT_MS

  // Reads every RDMX_* variable from the environment over the defaults. Returns false
  // and fills err with "RDMX_X='v' is not accepted: ..." on the first invalid value.
  bool load_from_env(std::string& err);
  // Sets one setting by its variable name, with the same validation.
  bool set(const std::string& name, const std::string& value, std::string& err);

  // RNR retry count actually used: with per-connection credits RNR cannot happen,
  // so 0 turns a credit bug into an error; a shared receive queue can run dry, so 7.
  uint8_t effective_rnr_retry() const {
    return rnr_retry >= 0 ? uint8_t(rnr_retry) : (srq ? 7 : 0);
  }

  static void print_all(std::FILE* out);
};

}  // namespace rdmx
