// The PMIx bootstrap: a rank started by a PMIx launcher (Open MPI's mpirun, prterun,
// Slurm's srun --mpi=pmix) learns its rank, the job's size and its namespace from PMIx,
// and the ranks exchange their addresses through PMIx (put, commit, one fence that
// collects the data), with no port of rdmx's own. Rank 0 also puts a fresh 128-bit job
// secret there, unless RDMX_JOB_SECRET already gives every rank one; connections then
// prove it (docs/security.md). The fence waits at most RDMX_BOOTSTRAP_TIMEOUT_MS.
#pragma once

#include <string>

#include "core/settings.h"
#include "rdmx/rdmx.h"

namespace rdmx::bootstrap {

// Whether this library was built with PMIx.
bool pmix_built();
// Whether a PMIx launcher started this process (it left PMIX_NAMESPACE and PMIX_RANK).
bool pmix_launched();
// Starts this rank through PMIx: on success *out is a context with every peer added.
// On failure returns the status and fills err.
int pmix_init(const Settings& s, rdmx_context_t** out, std::string& err);

}  // namespace rdmx::bootstrap
