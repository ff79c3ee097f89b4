// The two ranks of a measuring tool (rdmx_pingpong, rdmx_perf). Without RDMX_RANK both
// run in this process, a thread each with its own context and endpoint, so any fabric
// works (loopback included) and no launcher is needed; with RDMX_RANK set (rdmx_launch
// -n 2 -- TOOL) or under a PMIx launcher (mpirun -np 2 TOOL, srun --mpi=pmix) this
// process is one rank of a two-process job started by rdmx_init_bootstrap. Either way
// the data really crosses the fabric.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "rdmx/rdmx.h"

namespace rdmx::tools {

// What a rank's body gets: its context, its rank and its peer's, and a flag that either
// rank raises on failure (shared when both run in this process).
struct RankEnv {
  rdmx_context_t* ctx = nullptr;
  int rank = 0;
  int peer = 1;
  std::atomic<bool>* failed = nullptr;
  bool threads = false;  // both ranks run in this process
};

// Runs body on both ranks over fabric (empty: RDMX_FABRIC's choice); rank 0's body
// prints. tool names the program in error messages. Returns once both ranks are
// finalized: true if both initialised and both bodies returned true.
bool run_two_ranks(const char* tool, const std::string& fabric,
                   const std::function<bool(const RankEnv&)>& body);

// The fabric and how the ranks run, for a table's heading: "ofi, peer through shm
// (both ranks in one process, a thread each)".
std::string describe(const RankEnv& env);
// The fabric alone: "ofi", or "ofi, peer through shm" where the peer's path differs.
std::string fabric_path(const RankEnv& env);

}  // namespace rdmx::tools
