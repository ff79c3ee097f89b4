// The PMIx bootstrap (pmix_bootstrap.h).
#include "bootstrap/pmix_bootstrap.h"

#include <sys/random.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "api/context.h"
#include "bootstrap/bootstrap_socket.h"
#include "config.h"

#if RDMX_HAVE_PMIX
#include <pmix.h>
#endif

namespace rdmx::bootstrap {

bool pmix_built() { return RDMX_HAVE_PMIX; }

bool pmix_launched() { return std::getenv("PMIX_NAMESPACE") && std::getenv("PMIX_RANK"); }

#if !RDMX_HAVE_PMIX

int pmix_init(const Settings&, rdmx_context_t**, std::string& err) {
  err =
      "this rdmx was built without PMIx (apt-get install libpmix-dev, then configure "
      "--with-pmix=yes)";
  return RDMX_ERR_UNSUPPORTED;
}

#else

namespace {

constexpr const char* kAddressKey = "rdmx.address";
constexpr const char* kSecretKey = "rdmx.secret";
constexpr size_t kSecretBytes = 16;

// The job key is a label (docs/security.md): the namespace's name, hashed (FNV-1a), so
// that every rank of the job derives the same one.
uint64_t job_key_of(const char* nspace) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char* p = nspace; *p; ++p) h = (h ^ uint8_t(*p)) * 0x100000001b3ull;
  return h;
}

std::string pmix_error(const char* call, pmix_status_t rc) {
  return std::string(call) + " failed: " + PMIx_Error_string(rc);
}

// One PMIx session, ended when the context is finalized (or on a failure before).
class Session {
 public:
  int start(std::string& err) {
    pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
      err = pmix_error("PMIx_Init", rc) +
            " (was this process started by a PMIx launcher: mpirun, prterun, srun --mpi=pmix?)";
      return RDMX_ERR_UNREACHABLE;
    }
    live_ = true;
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* v = nullptr;
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &v);
    if (rc != PMIX_SUCCESS || !v || v->type != PMIX_UINT32) {
      err = rc != PMIX_SUCCESS ? pmix_error("PMIx_Get(PMIX_JOB_SIZE)", rc)
                               : "PMIx gave the job size in an unexpected type";
      if (v) PMIX_VALUE_RELEASE(v);
      return RDMX_ERR_PROTOCOL;
    }
    uint32_t size = v->data.uint32;
    PMIX_VALUE_RELEASE(v);
    if (size < 1 || size > uint32_t(kMaxRanks) || me_.rank >= size) {
      err = "PMIx says rank " + std::to_string(me_.rank) + " of " + std::to_string(size) +
            " (rdmx accepts 1 to " + std::to_string(kMaxRanks) + " ranks)";
      return RDMX_ERR_INVALID;
    }
    size_ = int32_t(size);
    return RDMX_OK;
  }
  void end() {
    if (live_) PMIx_Finalize(nullptr, 0);
    live_ = false;
  }
  ~Session() { end(); }

  int32_t rank() const { return int32_t(me_.rank); }
  int32_t size() const { return size_; }
  uint64_t job_key() const { return job_key_of(me_.nspace); }

  int put(const char* key, const void* data, size_t len, std::string& err) {
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = static_cast<char*>(const_cast<void*>(data));
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    if (rc != PMIX_SUCCESS) {
      err = pmix_error("PMIx_Put", rc);
      return RDMX_ERR_PROTOCOL;
    }
    return RDMX_OK;
  }

  // Commits what this rank put and waits, at most timeout_ms, until every rank has.
  int fence(uint64_t timeout_ms, std::string& err) {
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
      err = pmix_error("PMIx_Commit", rc);
      return RDMX_ERR_PROTOCOL;
    }
    pmix_info_t info[2];
    bool collect = true;
    int seconds = int((timeout_ms + 999) / 1000);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    rc = PMIx_Fence(nullptr, 0, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
      err = pmix_error("PMIx_Fence", rc) + " (waited at most " + std::to_string(seconds) +
            " s for every rank: RDMX_BOOTSTRAP_TIMEOUT_MS)";
      return rc == PMIX_ERR_TIMEOUT ? RDMX_ERR_TIMEOUT : RDMX_ERR_PEER_LOST;
    }
    return RDMX_OK;
  }

  // What rank r put under key (after the fence): false with err if it is not there.
  bool get(int32_t r, const char* key, std::vector<uint8_t>& out, std::string& err) {
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me_.nspace, pmix_rank_t(r));
    pmix_value_t* v = nullptr;
    pmix_status_t rc = PMIx_Get(&p, key, nullptr, 0, &v);
    bool ok = rc == PMIX_SUCCESS && v && v->type == PMIX_BYTE_OBJECT;
    if (ok) out.assign(v->data.bo.bytes, v->data.bo.bytes + v->data.bo.size);
    if (!ok)
      err = "rank " + std::to_string(r) + " has no " + key + " in PMIx" +
            (rc != PMIX_SUCCESS ? ": " + std::string(PMIx_Error_string(rc)) : std::string());
    if (v) PMIX_VALUE_RELEASE(v);
    return ok;
  }

 private:
  pmix_proc_t me_{};
  int32_t size_ = 0;
  bool live_ = false;
};

// Starts the context of a session's rank; the caller finalizes it on failure.
int start_context(Session& pmix, const Settings& s, rdmx_context_t** ctx, std::string& err) {
  // The secret comes from rank 0 through PMIx unless every rank already has one: until
  // it is set, connections wait for it (RDMX_AUTH=secret).
  bool secret_from_root = s.job_secret.empty() && s.auth != "job-key";
  rdmx_settings_t* so = nullptr;
  rdmx_settings_create(&so);
  if (secret_from_root) rdmx_settings_set(so, "RDMX_AUTH", "secret");
  rdmx_init_params_t p{pmix.rank(), pmix.size(), nullptr, pmix.job_key(), so};
  int rc = rdmx_init(&p, ctx);
  rdmx_settings_free(so);
  if (rc) {
    err = rdmx_last_error(nullptr);
    return rc;
  }
  std::vector<uint8_t> secret(kSecretBytes);
  if (secret_from_root && pmix.rank() == 0) {
    if (::getrandom(secret.data(), secret.size(), 0) != ssize_t(secret.size())) {
      err = "no randomness for the job secret (getrandom failed)";
      return RDMX_ERR_FABRIC;
    }
    if ((rc = pmix.put(kSecretKey, secret.data(), secret.size(), err))) return rc;
  }
  std::vector<uint8_t> mine = address_of(*ctx);
  if ((rc = pmix.put(kAddressKey, mine.data(), mine.size(), err))) return rc;
  if ((rc = pmix.fence(s.bootstrap_wait_ms, err))) return rc;
  if (secret_from_root) {
    if (!pmix.get(0, kSecretKey, secret, err)) return RDMX_ERR_PROTOCOL;
    if ((rc = rdmx_set_job_secret(*ctx, secret.data(), secret.size()))) {
      err = rdmx_last_error(*ctx);
      return rc;
    }
  }
  std::vector<uint8_t> addr;
  for (int32_t r = 0; r < pmix.size(); ++r) {
    if (!pmix.get(r, kAddressKey, addr, err)) return RDMX_ERR_PROTOCOL;
    if ((rc = rdmx_add_peer(*ctx, r, addr.data(), addr.size()))) {
      err = "rank " + std::to_string(r) + "'s address: " + rdmx_last_error(*ctx);
      return rc;
    }
  }
  return RDMX_OK;
}

}  // namespace

int pmix_init(const Settings& s, rdmx_context_t** out, std::string& err) {
  // Without a launcher's variables PMIx_Init has no server to talk to (and libpmix 4.2
  // leaks what it parsed when it fails): say so without trying.
  if (!pmix_launched()) {
    err =
        "no PMIx launcher started this process (PMIX_NAMESPACE and PMIX_RANK are not set): "
        "start it with mpirun, prterun or srun --mpi=pmix, or use RDMX_BOOTSTRAP_METHOD=socket";
    return RDMX_ERR_UNREACHABLE;
  }
  auto pmix = std::make_shared<Session>();
  if (int rc = pmix->start(err)) return rc;
  rdmx_context_t* ctx = nullptr;
  if (int rc = start_context(*pmix, s, &ctx, err)) {
    err = "PMIx bootstrap of rank " + std::to_string(pmix->rank()) + " of " +
          std::to_string(pmix->size()) + ": " + err;
    if (ctx) rdmx_finalize(ctx);
    return rc;
  }
  at_finalize(ctx, [pmix] { pmix->end(); });
  *out = ctx;
  return RDMX_OK;
}

#endif

}  // namespace rdmx::bootstrap
