// rdmx_init_bootstrap: a rank of a job started without MPI: by a PMIx launcher
// (pmix_bootstrap.h), or by rdmx_launch or by hand with RDMX_RANK, RDMX_SIZE and
// RDMX_BOOTSTRAP set (the socket bootstrap, bootstrap.h).
#include <new>
#include <string>
#include <vector>

#include "api/context.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/pmix_bootstrap.h"
#include "core/settings.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {
namespace {

int init_bootstrap(rdmx_context_t** out) {
  if (!out) return report_init_failure(RDMX_ERR_INVALID, "ctx must not be NULL");
  *out = nullptr;
  Settings s;
  std::string err;
  if (!s.load_from_env(err)) return report_init_failure(RDMX_ERR_INVALID, err);
  if (s.bootstrap_method == "pmix" ||
      (s.bootstrap_method == "auto" && pmix_built() && pmix_launched())) {
    if (int rc = pmix_init(s, out, err)) return report_init_failure(rc, err);
    return RDMX_OK;
  }
  Config cfg;
  if (!config_from(s, cfg, err))
    return report_init_failure(RDMX_ERR_INVALID, "rdmx_init_bootstrap: " + err);

  Bootstrap b;
  uint64_t job_key = 0;
  if (int rc = b.join(cfg, job_key, err))
    return report_init_failure(rc, "bootstrap of rank " + std::to_string(cfg.rank) + ": " + err);

  rdmx_init_params_t p{cfg.rank, cfg.size, nullptr, job_key, nullptr};
  rdmx_context_t* ctx = nullptr;
  if (int rc = rdmx_init(&p, &ctx)) {
    b.abort(rdmx_last_error(nullptr));
    return rc;
  }
  std::vector<std::vector<uint8_t>> all;
  if (int rc = b.exchange(address_of(ctx), all, err)) {
    rdmx_finalize(ctx);
    return report_init_failure(rc, "bootstrap of rank " + std::to_string(cfg.rank) + ": " + err);
  }
  for (int32_t r = 0; r < cfg.size; ++r) {
    const auto& a = all[size_t(r)];
    if (int rc = rdmx_add_peer(ctx, r, a.data(), a.size())) {
      std::string why = "rank " + std::to_string(r) + "'s address: " + rdmx_last_error(ctx);
      rdmx_finalize(ctx);
      return report_init_failure(rc, "bootstrap of rank " + std::to_string(cfg.rank) + ": " + why);
    }
  }
  *out = ctx;
  return RDMX_OK;
}

}  // namespace
}  // namespace rdmx::bootstrap

extern "C" int rdmx_init_bootstrap(rdmx_context_t** ctx) {
  try {
    return rdmx::bootstrap::init_bootstrap(ctx);
  } catch (const std::bad_alloc&) {
    return RDMX_ERR_NO_MEMORY;
  } catch (...) {
    return RDMX_ERR_FABRIC;
  }
}
