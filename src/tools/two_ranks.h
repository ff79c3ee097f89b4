// The two ranks of a measuring tool (rdmx_pingpong, rdmx_perf). Without RDMX_RANK both
// run in this process, a thread each with its own context and endpoint, so any fabric
// works (loopback included) and no launcher is needed; with RDMX_RANK set (rdmx_launch
// -n 2 -- TOOL) or under a PMIx launcher (mpirun -np 2 TOOL, srun --mpi=pmix) this
// process is one rank of a job started by rdmx_init_bootstrap. Either way the data
// really crosses the fabric.
//
// A launched job of more than two ranks runs in pairs, rank 2k with rank 2k + 1, all at
// once (mpirun -np 4 TOOL across two hosts: each pair's traffic crosses the same
// fabric as a real job's); rank 0 prints its own pair's figures. An odd size is refused.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "rdmx/rdmx.h"

namespace rdmx::tools {

// What a rank's body gets: its context, its rank and its peer's, its part in the pair,
// and a flag that either rank raises on failure (shared when both run in this process).
struct RankEnv {
  rdmx_context_t* ctx = nullptr;
  int rank = 0;  // in the job
  int peer = 1;  // the other rank of the pair
  // 0: the pair's first rank, which times the loops; 1: the one that only answers.
  int role = 0;
  int pairs = 1;            // pairs running at once
  const char* launch = "";  // how the job was started: "standalone bootstrap", "PMIx bootstrap"
  std::atomic<bool>* failed = nullptr;
  bool threads = false;  // both ranks run in this process
};

// Runs body on both ranks over fabric (empty: RDMX_FABRIC's choice); rank 0's body
// prints. tool names the program in error messages. Returns once both ranks are
// finalized: true if both initialised and both bodies returned true.
bool run_two_ranks(const char* tool, const std::string& fabric,
                   const std::function<bool(const RankEnv&)>& body);

// The fabric and how the ranks run, for a table's heading: "ofi, peer through shm
// (both ranks in one process, a thread each)", "ofi (one rank per process, PMIx
// bootstrap; ranks 0 and 1 of 2 pairs running at once)".
std::string describe(const RankEnv& env);
// The fabric alone: "ofi", or "ofi, peer through shm" where the peer's path differs.
std::string fabric_path(const RankEnv& env);

}  // namespace rdmx::tools
