#include "tools/two_ranks.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace rdmx::tools {
namespace {

// Both ranks in this process: each initialises, publishes its address, adds the
// other's, runs body, and waits for the other to finish before it finalizes (its
// context must keep progressing while the other still expects completions).
struct InProcess {
  std::vector<uint8_t> addr[2];
  std::atomic<int> ready{0};
  std::atomic<bool> failed{false};

  void spin_until(int target, rdmx_context_t* c) {
    while (ready.load() < target && !failed) rdmx_progress(c);
  }

  void rank_main(const char* tool, int rank, const std::string& fab,
                 const std::function<bool(const RankEnv&)>& body) {
    rdmx_init_params_t p{rank, 2, fab.empty() ? nullptr : fab.c_str(), 7, nullptr};
    rdmx_context_t* c = nullptr;
    if (int rc = rdmx_init(&p, &c)) {
      std::fprintf(stderr, "%s: rank %d: rdmx_init: %s: %s\n", tool, rank, rdmx_strerror(rc),
                   rdmx_last_error(nullptr));
      failed = true;
      ready.fetch_add(2);  // the other rank must not wait for this one
      return;
    }
    size_t len = 0;
    rdmx_address(c, nullptr, &len);
    addr[rank].resize(len);
    rdmx_address(c, addr[rank].data(), &len);
    ready.fetch_add(1);
    spin_until(2, c);
    if (!failed) {
      const auto& a = addr[1 - rank];
      if (int rc = rdmx_add_peer(c, 1 - rank, a.data(), a.size())) {
        std::fprintf(stderr, "%s: rank %d: rdmx_add_peer: %s: %s\n", tool, rank, rdmx_strerror(rc),
                     rdmx_last_error(c));
        failed = true;
      } else {
        if (!body(RankEnv{c, rank, 1 - rank, rank, 1, "", &failed, true})) failed = true;
      }
    }
    ready.fetch_add(1);
    spin_until(4, c);
    rdmx_finalize(c);
  }
};

bool in_process(const char* tool, const std::string& fabric,
                const std::function<bool(const RankEnv&)>& body) {
  InProcess s;
  std::thread t1([&] { s.rank_main(tool, 1, fabric, body); });
  s.rank_main(tool, 0, fabric, body);
  t1.join();
  return !s.failed;
}

// This process's rank of a job started by rdmx_launch (or anything that sets
// RDMX_RANK, RDMX_SIZE and RDMX_BOOTSTRAP) or by a PMIx launcher (mpirun, srun).
bool bootstrapped(const char* tool, const std::string& fabric, const char* launch,
                  const std::function<bool(const RankEnv&)>& body) {
  if (!fabric.empty()) ::setenv("RDMX_FABRIC", fabric.c_str(), 1);
  rdmx_context_t* c = nullptr;
  if (int rc = rdmx_init_bootstrap(&c)) {
    std::fprintf(stderr, "%s: %s: %s\n", tool, rdmx_strerror(rc), rdmx_last_error(nullptr));
    return false;
  }
  int rank = rdmx_context_rank(c), size = rdmx_context_size(c);
  if (size < 2 || size % 2) {
    if (rank == 0)
      std::fprintf(stderr,
                   "%s: needs an even number of ranks, run in pairs (0 with 1, 2 with 3, ...); "
                   "the job has %d\n",
                   tool, size);
    rdmx_finalize(c);
    return false;
  }
  std::atomic<bool> failed{false};
  bool ok = body(RankEnv{c, rank, rank ^ 1, rank & 1, size / 2, launch, &failed, false}) && !failed;
  rdmx_finalize(c);
  return ok;
}

}  // namespace

bool run_two_ranks(const char* tool, const std::string& fabric,
                   const std::function<bool(const RankEnv&)>& body) {
  bool pmix_launched = std::getenv("PMIX_NAMESPACE") && std::getenv("PMIX_RANK");
  if (std::getenv("RDMX_RANK") || pmix_launched) {
    // rdmx_init_bootstrap's choice (RDMX_BOOTSTRAP_METHOD), for the table's heading.
    const char* m = std::getenv("RDMX_BOOTSTRAP_METHOD");
    std::string method = m && *m ? m : "auto";
    bool pmix = method == "pmix" || (method == "auto" && pmix_launched);
    return bootstrapped(tool, fabric, pmix ? "PMIx bootstrap" : "standalone bootstrap", body);
  }
  return in_process(tool, fabric, body);
}

std::string fabric_path(const RankEnv& env) {
  std::string name = rdmx_fabric_name(env.ctx);
  std::string peer = rdmx_peer_fabric(env.ctx, env.peer);
  return peer.empty() || peer == name ? name : name + ", peer through " + peer;
}

std::string describe(const RankEnv& env) {
  if (env.threads) return fabric_path(env) + " (both ranks in one process, a thread each)";
  std::string how = fabric_path(env) + " (one rank per process, " + env.launch;
  if (env.pairs > 1)
    how += "; ranks " + std::to_string(env.rank) + " and " + std::to_string(env.peer) + " of " +
           std::to_string(env.pairs) + " pairs running at once";
  return how + ")";
}

}  // namespace rdmx::tools
