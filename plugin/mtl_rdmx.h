/*
 * The rdmx MTL: Open MPI's cm PML over the rdmx C API (include/rdmx/rdmx.h).
 *
 * Ranks in rdmx are MPI_COMM_WORLD ranks (process vpids); a communicator's context id is
 * the rdmx context id. Every rdmx call is made under one lock (taken only when Open MPI
 * runs with MPI_THREAD_MULTIPLE). rdmx completion callbacks only queue the request;
 * Open MPI's completion callbacks run after the rdmx call has returned and the lock is
 * dropped, so they may call back into the MTL.
 */
#ifndef MTL_RDMX_H
#define MTL_RDMX_H

#include "mtl_rdmx_compat.h" /* ompi_config.h, and what differs between 4.1 and 5.0 */
#include "rdmx/rdmx.h"

BEGIN_C_DECLS

/* A communicator's peers in rdmx terms, kept in comm->c_pml_comm (which pml cm leaves
 * to the MTL). */
typedef struct mtl_rdmx_comm {
  int identity;        /* comm rank r is world rank r for every peer */
  int size;            /* peers: the remote group's size */
  int32_t* to_world;   /* comm rank -> world rank; NULL when identity */
  int32_t* from_world; /* world rank -> comm rank or -1; NULL when identity */
} mtl_rdmx_comm_t;

enum { MTL_RDMX_SEND = 1, MTL_RDMX_RECV = 2 };
enum { MTL_RDMX_IDLE = 0, MTL_RDMX_POSTED = 1, MTL_RDMX_COMPLETED = 2 };

/* Lives in the memory pml cm reserves after its request (mtl_request_size). */
typedef struct mtl_rdmx_request {
  mca_mtl_request_t super;
  struct mtl_rdmx_request* next; /* the completion queue */
  rdmx_request_t* rreq;
  struct ompi_communicator_t* comm;
  struct opal_convertor_t* convertor;
  void* buf;
  size_t length;
  rdmx_status_info_t status;
  int kind;
  int state;
  bool free_after; /* buf is a packing buffer, not the user's memory */
  int done;        /* blocking send: set by its completion callback */
} mtl_rdmx_request_t;

typedef struct mtl_rdmx_module {
  mca_mtl_base_module_t super;
  rdmx_context_t* ctx;
  int32_t rank;
  int32_t size;
  uint32_t jobid;
  unsigned char* peer_added; /* per world rank: rdmx_add_peer done */
  opal_mutex_t lock;
  mtl_rdmx_request_t* done_head;
  mtl_rdmx_request_t* done_tail;
  int output;             /* opal_output stream, verbosity mtl_rdmx_verbose */
  int peer_lost_code;     /* MPI error code of a lost peer (class MPI_ERR_OTHER); 0: not made */
  int unreachable_code;   /* ... of a peer that cannot be reached */
  uint64_t idle_since_ns; /* progress found nothing since then (0: it found something) */
  bool sleep_when_idle;   /* RDMX_IDLE=sleep */
  bool secret_from_modex; /* the job secret is rank 0's, read from the modex */
  bool secret_set;        /* rdmx_set_job_secret done */
  bool release_hook;      /* opal's memory release hook forwards to rdmx_memory_released */
  uint64_t start_cpu_ns;  /* this thread's CPU time in the component's init and add_procs */
} mtl_rdmx_module_t;

/* The calling thread's CPU time, in ns (start-up is measured with it: docs/scale.md). */
static inline uint64_t mtl_rdmx_thread_cpu_ns(void) {
  struct timespec t;
  if (0 != clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)) return 0;
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The modex key under which rank 0 publishes the job secret. */
#define MTL_RDMX_SECRET_KEY "mtl.rdmx.secret"

extern mtl_rdmx_module_t ompi_mtl_rdmx;
OMPI_DECLSPEC extern mca_mtl_base_component_2_0_0_t mca_mtl_rdmx_component;

#define MTL_RDMX_HELP_FILE "help-mtl-rdmx.txt"

/* mtl_rdmx_module.c */
int mtl_rdmx_error(int rdmx_status);
int mtl_rdmx_add_peer(int32_t world_rank);
int mtl_rdmx_add_procs(struct mca_mtl_base_module_t* mtl, size_t nprocs,
                       struct ompi_proc_t** procs);
int mtl_rdmx_del_procs(struct mca_mtl_base_module_t* mtl, size_t nprocs,
                       struct ompi_proc_t** procs);
int mtl_rdmx_add_comm(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm);
int mtl_rdmx_del_comm(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm);
int32_t mtl_rdmx_world_rank_slow(struct ompi_communicator_t* comm, int rank);
int mtl_rdmx_comm_rank_slow(struct ompi_communicator_t* comm, int32_t world_rank);

/* mtl_rdmx_ulfm.c: the BML ULFM needs under pml cm, set up only when ULFM is enabled */
int mtl_rdmx_ulfm_init(bool enable_progress_threads, bool enable_mpi_threads);
int mtl_rdmx_ulfm_add_procs(size_t nprocs, struct ompi_proc_t** procs);
void mtl_rdmx_ulfm_finalize(void);

/* mtl_rdmx_p2p.c */
int mtl_rdmx_send(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int dest,
                  int tag, struct opal_convertor_t* convertor, mca_pml_base_send_mode_t mode);
int mtl_rdmx_isend(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int dest,
                   int tag, struct opal_convertor_t* convertor, mca_pml_base_send_mode_t mode,
                   bool blocking, mca_mtl_request_t* mtl_request);
int mtl_rdmx_irecv(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                   int tag, struct opal_convertor_t* convertor, mca_mtl_request_t* mtl_request);
int mtl_rdmx_iprobe(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                    int tag, int* flag, struct ompi_status_public_t* status);
int mtl_rdmx_improbe(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                     int tag, int* matched, struct ompi_message_t** message,
                     struct ompi_status_public_t* status);
int mtl_rdmx_imrecv(struct mca_mtl_base_module_t* mtl, struct opal_convertor_t* convertor,
                    struct ompi_message_t** message, mca_mtl_request_t* mtl_request);
int mtl_rdmx_cancel(struct mca_mtl_base_module_t* mtl, mca_mtl_request_t* mtl_request, int flag);
int mtl_rdmx_progress(void);

/* The world rank of a communicator's rank; O(1), no lookup for world-like comms. */
static inline int32_t mtl_rdmx_world_rank(struct ompi_communicator_t* comm, int rank) {
  mtl_rdmx_comm_t* c = (mtl_rdmx_comm_t*)comm->c_pml_comm;
  if (OPAL_LIKELY(NULL != c)) return c->identity ? rank : c->to_world[rank];
  return mtl_rdmx_world_rank_slow(comm, rank);
}

/* The communicator rank of a world rank (a message's source). */
static inline int mtl_rdmx_comm_rank(struct ompi_communicator_t* comm, int32_t world_rank) {
  mtl_rdmx_comm_t* c = (mtl_rdmx_comm_t*)comm->c_pml_comm;
  if (OPAL_LIKELY(NULL != c)) return c->identity ? world_rank : c->from_world[world_rank];
  return mtl_rdmx_comm_rank_slow(comm, world_rank);
}

/* Stops forwarding opal's memory release hook (mtl_rdmx_component.c). */
void mtl_rdmx_release_hook_off(void);

END_C_DECLS

#endif /* MTL_RDMX_H */
