/*
 * What differs between the Open MPI series the component builds against (4.1 and 5.0),
 * in one place. configure (m4/rdmx_check_ompi.m4) finds the series and the shape of the
 * MTL interface and says so with these macros:
 *
 *   MTL_RDMX_OMPI_SERIES      the major version, 4 or 5: where the runtime's headers live
 *                             (ORTE's rte.h and opal/threads in 4; ompi_rte.h, the threads
 *                             framework and PMIx itself in 5) and the modex scope's name
 *   MTL_RDMX_OMPI_INIT_ACCEL  1 when mtl_init has the accelerator_support out-parameter
 *   MTL_RDMX_OMPI_LOCAL_CID   1 when a communicator's context id is read through
 *                             ompi_comm_get_local_cid (5: c_contextid became a 128-bit
 *                             extended id and the agreed 32-bit index is c_index)
 *
 * ULFM needs no configure test: opal_config.h says OPAL_ENABLE_FT_MPI.
 * docs/architecture.md lists the differences.
 */
#ifndef MTL_RDMX_COMPAT_H
#define MTL_RDMX_COMPAT_H

#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/mtl/mtl.h"

#if !defined(MTL_RDMX_OMPI_SERIES)
#error "MTL_RDMX_OMPI_SERIES is not set: build the component through configure (--with-ompi)"
#elif MTL_RDMX_OMPI_SERIES == 5
#include "ompi/runtime/ompi_rte.h"
#include "ompi/runtime/params.h"
#include "opal/mca/pmix/pmix-internal.h"
#include "opal/mca/threads/mutex.h"
/* The scope of data published in the modex: PMIx's own constant (no OPAL wrapper). */
#define MTL_RDMX_MODEX_GLOBAL PMIX_GLOBAL
#elif MTL_RDMX_OMPI_SERIES == 4
#include "ompi/mca/rte/rte.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/threads/mutex.h"
#define MTL_RDMX_MODEX_GLOBAL OPAL_PMIX_GLOBAL
#else
#error "the rdmx MTL supports Open MPI 4.1 and 5.0 (MTL_RDMX_OMPI_SERIES 4 or 5)"
#endif

BEGIN_C_DECLS

/* The context id rdmx matches on: a 32-bit id every member of the communicator agrees on.
 * Open MPI 5 gives one (c_index, made global by the old allreduce algorithm) as long as
 * the MTL does not claim MCA_MTL_BASE_FLAG_SUPPORTS_EXT_CID, which rdmx does not. */
static inline uint32_t mtl_rdmx_cid(const struct ompi_communicator_t* comm) {
#if MTL_RDMX_OMPI_LOCAL_CID
  return ompi_comm_get_local_cid(comm);
#else
  return comm->c_contextid;
#endif
}

/* The component's init in the shape this Open MPI calls it: the series-independent
 * mtl_rdmx_init does the work; rdmx never takes accelerator (GPU) buffers. */
mca_mtl_base_module_t* mtl_rdmx_init(bool enable_progress_threads, bool enable_mpi_threads);
#if MTL_RDMX_OMPI_INIT_ACCEL
static inline mca_mtl_base_module_t* mtl_rdmx_component_init(bool enable_progress_threads,
                                                             bool enable_mpi_threads,
                                                             bool* accelerator_support) {
  *accelerator_support = false;
  return mtl_rdmx_init(enable_progress_threads, enable_mpi_threads);
}
#else
static inline mca_mtl_base_module_t* mtl_rdmx_component_init(bool enable_progress_threads,
                                                             bool enable_mpi_threads) {
  return mtl_rdmx_init(enable_progress_threads, enable_mpi_threads);
}
#endif

/* The error a request gets when its peer's process is gone. With ULFM compiled in and
 * enabled for the job (mpirun --with-ft ulfm, which sets mpi_ft_enable), that is
 * MPI_ERR_PROC_FAILED, as the fault-tolerance chapter asks; otherwise the runtime ends
 * the job when a process dies, and a request that sees the loss first gets own_code,
 * the component's code for it (class MPI_ERR_OTHER), or if there is none the peer is
 * reported unreachable. */
static inline int mtl_rdmx_peer_lost_error(int own_code) {
#if OPAL_ENABLE_FT_MPI
  if (ompi_ftmpi_enabled) return MPI_ERR_PROC_FAILED;
#endif
  return own_code > 0 ? own_code : OMPI_ERR_UNREACH;
}

END_C_DECLS

#endif /* MTL_RDMX_COMPAT_H */
