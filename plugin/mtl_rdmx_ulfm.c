/*
 * ULFM under the cm PML (Open MPI 5). ULFM's reliable broadcast, failure detector and
 * agreement send their own small messages through the BML, which the ob1 PML opens and
 * initialises; under cm nobody does, and with mpirun --with-ft ulfm MPI_Init calls a NULL
 * bml_register (ompi_comm_rbcast_init) and crashes, whatever the MTL. So when ULFM is
 * enabled for the job, the component sets up the BML itself, as ob1 would: its BTLs
 * (shared memory, tcp) carry ULFM's control messages only; every MPI message still goes
 * through rdmx. Without ULFM (compiled out, or not enabled) none of this runs.
 */
#include "mtl_rdmx.h"

#if OPAL_ENABLE_FT_MPI
#include "ompi/mca/bml/base/base.h"
#include "ompi/runtime/params.h"
#include "opal/class/opal_bitmap.h"
#include "opal/util/output.h"

static bool mtl_rdmx_bml_opened = false;

int mtl_rdmx_ulfm_init(bool enable_progress_threads, bool enable_mpi_threads) {
  if (!ompi_ftmpi_enabled || mtl_rdmx_bml_opened) return OMPI_SUCCESS;
  int rc = mca_base_framework_open(&ompi_bml_base_framework, 0);
  if (OMPI_SUCCESS != rc) {
    opal_output(0, "mtl rdmx: ULFM needs the BML, which did not open (%d)", rc);
    return rc;
  }
  rc = mca_bml_base_init(enable_progress_threads, enable_mpi_threads);
  if (OMPI_SUCCESS != rc || NULL == mca_bml.bml_register) {
    opal_output(0, "mtl rdmx: ULFM needs the BML, and no BML module started (%d)", rc);
    (void)mca_base_framework_close(&ompi_bml_base_framework);
    return OMPI_SUCCESS == rc ? OMPI_ERR_NOT_AVAILABLE : rc;
  }
  mtl_rdmx_bml_opened = true;
  opal_output_verbose(1, ompi_mtl_rdmx.output,
                      "mtl rdmx: ULFM enabled: its control messages go through the BML");
  return OMPI_SUCCESS;
}

int mtl_rdmx_ulfm_add_procs(size_t nprocs, struct ompi_proc_t** procs) {
  if (!mtl_rdmx_bml_opened) return OMPI_SUCCESS;
  opal_bitmap_t reachable;
  OBJ_CONSTRUCT(&reachable, opal_bitmap_t);
  int rc = opal_bitmap_init(&reachable, (int)nprocs);
  if (OMPI_SUCCESS == rc) rc = mca_bml.bml_add_procs(nprocs, procs, &reachable);
  OBJ_DESTRUCT(&reachable);
  return rc;
}

void mtl_rdmx_ulfm_finalize(void) {
  if (!mtl_rdmx_bml_opened) return;
  mtl_rdmx_bml_opened = false;
  (void)mca_bml.bml_finalize();
  (void)mca_base_framework_close(&ompi_bml_base_framework);
}

#else /* no ULFM in this Open MPI */

int mtl_rdmx_ulfm_init(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}

int mtl_rdmx_ulfm_add_procs(size_t nprocs, struct ompi_proc_t** procs) {
  (void)nprocs;
  (void)procs;
  return OMPI_SUCCESS;
}

void mtl_rdmx_ulfm_finalize(void) {}

#endif
