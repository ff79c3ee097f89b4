// This rank's index among the ranks of its job on this host, which spreads ranks over
// equally near RDMA devices: RDMX_LOCAL_RANK when set, else the first of the launchers'
// variables that is set (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID,
// PMIx's PMIX_LOCAL_RANK), else 0.
#pragma once

#include <cstdint>
#include <string>

namespace rdmx::topology {

struct LocalRank {
  unsigned value = 0;
  std::string source;  // the variable it came from, or "none set"
};

// setting: RDMX_LOCAL_RANK, negative when unset.
LocalRank local_rank(int64_t setting);

}  // namespace rdmx::topology
