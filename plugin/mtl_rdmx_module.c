/*
 * The rdmx MTL module: its function table, the mapping of rdmx status codes to Open
 * MPI's, peers (add_procs and lazily on first send) and communicators (rank maps).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mtl_rdmx.h"
#include "ompi/errhandler/errcode.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int mtl_rdmx_finalize(struct mca_mtl_base_module_t* mtl);

mtl_rdmx_module_t ompi_mtl_rdmx = {
    .super =
        {
            .mtl_max_contextid = INT_MAX,
            .mtl_max_tag = INT_MAX,
            .mtl_request_size = 0,
            .mtl_flags = 0,
            .mtl_add_procs = mtl_rdmx_add_procs,
            .mtl_del_procs = mtl_rdmx_del_procs,
            .mtl_finalize = mtl_rdmx_finalize,
            .mtl_send = mtl_rdmx_send,
            .mtl_isend = mtl_rdmx_isend,
            .mtl_irecv = mtl_rdmx_irecv,
            .mtl_iprobe = mtl_rdmx_iprobe,
            .mtl_imrecv = mtl_rdmx_imrecv,
            .mtl_improbe = mtl_rdmx_improbe,
            .mtl_cancel = mtl_rdmx_cancel,
            .mtl_add_comm = mtl_rdmx_add_comm,
            .mtl_del_comm = mtl_rdmx_del_comm,
        },
    .ctx = NULL,
    .output = -1,
};

/* The component's own error code, or fallback where Open MPI could not make one. */
static int mtl_rdmx_own_or(int own_code, int fallback) {
  return own_code > 0 ? own_code : fallback;
}

/* The one place where an rdmx status becomes an Open MPI error. Cancellation is not an
 * error (the status says _cancelled); truncation is MPI_ERR_TRUNCATE; a lost peer is
 * MPI_ERR_PROC_FAILED under ULFM, else, like a peer that cannot be reached, the
 * component's own code in MPI_ERR_OTHER (mtl_rdmx_make_codes; mtl_rdmx_peer_lost_error,
 * mtl_rdmx_compat.h). */
int mtl_rdmx_error(int rdmx_status) {
  switch (rdmx_status) {
    case RDMX_OK:
    case RDMX_ERR_CANCELLED: return OMPI_SUCCESS;
    case RDMX_ERR_INVALID: return OMPI_ERR_BAD_PARAM;
    case RDMX_ERR_NO_MEMORY: return OMPI_ERR_OUT_OF_RESOURCE;
    case RDMX_ERR_NO_DEVICE: return OMPI_ERR_NOT_AVAILABLE;
    case RDMX_ERR_UNREACHABLE:
    case RDMX_ERR_REJECTED:
      return mtl_rdmx_own_or(ompi_mtl_rdmx.unreachable_code, OMPI_ERR_UNREACH);
    case RDMX_ERR_TIMEOUT: /* on a request: its connection was not made in time */
      return mtl_rdmx_own_or(ompi_mtl_rdmx.unreachable_code, OMPI_ERR_TIMEOUT);
    case RDMX_ERR_PEER_LOST: return mtl_rdmx_peer_lost_error(ompi_mtl_rdmx.peer_lost_code);
    case RDMX_ERR_TRUNCATED: return MPI_ERR_TRUNCATE;
    case RDMX_ERR_AGAIN: return OMPI_ERR_TEMP_OUT_OF_RESOURCE;
    case RDMX_ERR_UNSUPPORTED: return OMPI_ERR_NOT_SUPPORTED;
    case RDMX_ERR_PROTOCOL:
    case RDMX_ERR_FABRIC:
    default: return OMPI_ERROR;
  }
}

static int mtl_rdmx_finalize(struct mca_mtl_base_module_t* mtl) {
  (void)mtl;
  mtl_rdmx_module_t* m = &ompi_mtl_rdmx;
  if (NULL == m->ctx) return OMPI_SUCCESS;
  mtl_rdmx_ulfm_finalize();
  opal_progress_unregister(mtl_rdmx_progress);
  rdmx_stats_t st;
  if (RDMX_OK == rdmx_get_stats(m->ctx, &st))
    opal_output_verbose(
        2, m->output,
        "mtl rdmx: rank %d: %llu eager sends (%llu inline), %llu mid-size, %llu sent in place, "
        "%llu rendezvous (%llu READ windows halved), %llu unexpected, %llu received without "
        "a buffer, %llu credit "
        "messages, %llu sends stalled for credits; registration cache: %llu hits, %llu misses, "
        "%llu "
        "evictions, %llu invalidations, %llu registrations; %llu reads split through shared "
        "memory, %llu back halves copied for peers; %llu requests still in use; %llu "
        "connections made, %llu closed by agreement, %llu made again, %llu live, %llu held "
        "(%llu bytes of receive buffers), %llu connects asked again; start-up took %.2f ms of "
        "CPU (init and add_procs), %.2f ms of it in the fabric library's discovery",
        m->rank, (unsigned long long)st.eager_sends, (unsigned long long)st.inline_sends,
        (unsigned long long)st.segmented_sends, (unsigned long long)st.in_place_sends,
        (unsigned long long)st.rndv_sends, (unsigned long long)st.read_backoffs,
        (unsigned long long)st.unexpected, (unsigned long long)st.unbuffered_recvs,
        (unsigned long long)st.credit_messages, (unsigned long long)st.credit_stalls,
        (unsigned long long)st.rcache_hits, (unsigned long long)st.rcache_misses,
        (unsigned long long)st.rcache_evictions, (unsigned long long)st.rcache_invalidations,
        (unsigned long long)st.rcache_registrations, (unsigned long long)st.split_reads,
        (unsigned long long)st.split_halves_served, (unsigned long long)st.requests_in_use,
        (unsigned long long)st.connections, (unsigned long long)st.connection_closes,
        (unsigned long long)st.connection_reopens, (unsigned long long)st.connections_live,
        (unsigned long long)st.connections_held, (unsigned long long)st.receive_buffer_bytes,
        (unsigned long long)st.connect_retries, (double)m->start_cpu_ns / 1e6,
        (double)st.library_discovery_ns / 1e6);
  int rc = rdmx_finalize(m->ctx);
  mtl_rdmx_release_hook_off(); /* after: the context is gone, nothing is cached */
  m->ctx = NULL;
  free(m->peer_added);
  m->peer_added = NULL;
  OBJ_DESTRUCT(&m->lock);
  rdmx_set_log_handler(NULL, NULL); /* the stream it writes to closes next */
  if (m->output >= 0) opal_output_close(m->output);
  m->output = -1;
  return mtl_rdmx_error(rc);
}

/* Gives rdmx the job secret rank 0 published in the modex, once, before the first peer
 * (and so before the first connection). Called with the lock held. */
static int mtl_rdmx_take_secret(mtl_rdmx_module_t* m) {
  if (!m->secret_from_modex || __atomic_load_n(&m->secret_set, __ATOMIC_ACQUIRE))
    return OMPI_SUCCESS;
  opal_process_name_t root = {.jobid = m->jobid, .vpid = 0};
  uint8_t* secret = NULL;
  size_t len = 0;
  int ret = OMPI_SUCCESS;
  OPAL_MODEX_RECV_STRING(ret, MTL_RDMX_SECRET_KEY, &root, &secret, &len);
  if (OMPI_SUCCESS != ret || NULL == secret) {
    opal_show_help(MTL_RDMX_HELP_FILE, "modex failed", true, ompi_process_info.nodename, m->rank,
                   "reading the job secret rank 0 published", ret);
    return OMPI_ERR_UNREACH;
  }
  int rc = rdmx_set_job_secret(m->ctx, secret, len);
  memset(secret, 0, len);
  free(secret);
  if (RDMX_OK != rc) {
    opal_output(0, "mtl rdmx: rank %d: %s", m->rank, rdmx_last_error(m->ctx));
    return mtl_rdmx_error(rc);
  }
  __atomic_store_n(&m->secret_set, true, __ATOMIC_RELEASE);
  return OMPI_SUCCESS;
}

/* mtl_rdmx_take_secret, taking the lock, unless the secret is already set. */
static int mtl_rdmx_ensure_secret(mtl_rdmx_module_t* m) {
  if (!m->secret_from_modex || __atomic_load_n(&m->secret_set, __ATOMIC_ACQUIRE))
    return OMPI_SUCCESS;
  OPAL_THREAD_LOCK(&m->lock);
  int ret = mtl_rdmx_take_secret(m);
  OPAL_THREAD_UNLOCK(&m->lock);
  return ret;
}

/* Gives rdmx the address a world rank published in the modex (once per rank). */
int mtl_rdmx_add_peer(int32_t world_rank) {
  mtl_rdmx_module_t* m = &ompi_mtl_rdmx;
  if (world_rank < 0 || world_rank >= m->size) return OMPI_ERR_BAD_PARAM;
  if (__atomic_load_n(&m->peer_added[world_rank], __ATOMIC_ACQUIRE)) return OMPI_SUCCESS;
  int sret = mtl_rdmx_ensure_secret(m);
  if (OMPI_SUCCESS != sret) return sret;
  opal_process_name_t name = {.jobid = m->jobid, .vpid = (opal_vpid_t)world_rank};
  uint8_t* addr = NULL;
  size_t len = 0;
  int ret = OMPI_SUCCESS;
  OPAL_MODEX_RECV(ret, &mca_mtl_rdmx_component.mtl_version, &name, &addr, &len);
  if (OMPI_SUCCESS != ret || NULL == addr) {
    opal_show_help(MTL_RDMX_HELP_FILE, "modex failed", true, ompi_process_info.nodename, m->rank,
                   "reading a peer's rdmx address (is rdmx selected on every process?)", ret);
    return OMPI_ERR_UNREACH;
  }
  int rc = RDMX_OK;
  OPAL_THREAD_LOCK(&m->lock);
  if (!m->peer_added[world_rank]) {
    rc = rdmx_add_peer(m->ctx, world_rank, addr, len);
    if (RDMX_OK == rc) __atomic_store_n(&m->peer_added[world_rank], 1, __ATOMIC_RELEASE);
  }
  const char* why = RDMX_OK == rc ? "" : rdmx_last_error(m->ctx);
  if (RDMX_OK != rc)
    opal_output(0, "mtl rdmx: rank %d: adding rank %d: %s", m->rank, world_rank, why);
  OPAL_THREAD_UNLOCK(&m->lock);
  free(addr);
  return mtl_rdmx_error(rc);
}

/* A code of class MPI_ERR_OTHER ("known error not in this list") with its own text,
 * which MPI_Error_string gives; -1 if Open MPI could not make one. */
static int mtl_rdmx_make_code(const char* text) {
  int code = ompi_mpi_errcode_add(MPI_ERR_OTHER);
  if (code <= 0) return -1;
  ompi_mpi_errnum_add_string(code, text, (int)strlen(text) + 1);
  return code;
}

/* Without ULFM, MPI has no class for a process that is gone or cannot be reached.
 * MPI_ERR_OTHER is the nearest: MPI_ERR_INTERN, where Open MPI files an unreachable peer,
 * would report a fault of the MPI library itself. Made at the first add_procs: Open MPI
 * 4.1 sets up its error codes after it has selected the MTL. */
static void mtl_rdmx_make_codes(void) {
  if (0 != ompi_mtl_rdmx.peer_lost_code) return;
  ompi_mtl_rdmx.peer_lost_code = mtl_rdmx_make_code(
      "MPI_ERR_OTHER: a peer process was lost (it exited, or its connection "
      "failed); the rdmx log line names the rank and why");
  ompi_mtl_rdmx.unreachable_code = mtl_rdmx_make_code(
      "MPI_ERR_OTHER: a peer process could not be reached (the connection "
      "was refused or not made in time); the rdmx log line names the rank "
      "and why");
}

int mtl_rdmx_add_procs(struct mca_mtl_base_module_t* mtl, size_t nprocs,
                       struct ompi_proc_t** procs) {
  (void)mtl;
  uint64_t cpu0 = mtl_rdmx_thread_cpu_ns();
  mtl_rdmx_make_codes();
  /* The secret now, whoever the procs are. MPI_Init adds only the ranks on this node
   * (and this rank, which needs no address): a rank alone on its node would otherwise
   * take the secret at its first send, and turn away every connection until then (a
   * receiver waiting for a rank on another node would wait for ever). */
  int ret = mtl_rdmx_ensure_secret(&ompi_mtl_rdmx);
  if (OMPI_SUCCESS != ret) return ret;
  for (size_t i = 0; i < nprocs; ++i) {
    const opal_process_name_t* name = &procs[i]->super.proc_name;
    if (name->jobid != ompi_mtl_rdmx.jobid) {
      opal_show_help(MTL_RDMX_HELP_FILE, "other job", true, ompi_process_info.nodename,
                     ompi_mtl_rdmx.rank);
      return OMPI_ERR_NOT_SUPPORTED;
    }
    ret = mtl_rdmx_add_peer((int32_t)name->vpid);
    if (OMPI_SUCCESS != ret) return ret;
  }
  ret = mtl_rdmx_ulfm_add_procs(nprocs, procs);
  ompi_mtl_rdmx.start_cpu_ns += mtl_rdmx_thread_cpu_ns() - cpu0;
  return ret;
}

int mtl_rdmx_del_procs(struct mca_mtl_base_module_t* mtl, size_t nprocs,
                       struct ompi_proc_t** procs) {
  (void)mtl;
  (void)nprocs;
  (void)procs;
  return OMPI_SUCCESS;
}

/* The world rank (vpid) of a group member, without creating its ompi_proc_t. */
static int mtl_rdmx_member(ompi_group_t* group, int rank, int32_t* world_rank) {
  ompi_proc_t* p = ompi_group_get_proc_ptr_raw(group, rank);
  opal_process_name_t name;
  if (ompi_proc_is_sentinel(p))
    name = ompi_proc_sentinel_to_name((uintptr_t)p);
  else
    name = p->super.proc_name;
  if (name.jobid != ompi_mtl_rdmx.jobid || (int32_t)name.vpid >= ompi_mtl_rdmx.size)
    return OMPI_ERR_NOT_SUPPORTED;
  *world_rank = (int32_t)name.vpid;
  return OMPI_SUCCESS;
}

int mtl_rdmx_add_comm(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm) {
  (void)mtl;
  ompi_group_t* group = comm->c_remote_group;
  int n = group->grp_proc_count;
  mtl_rdmx_comm_t* c = calloc(1, sizeof *c);
  int32_t* to_world = malloc((size_t)(n > 0 ? n : 1) * sizeof *to_world);
  if (NULL == c || NULL == to_world) goto no_memory;
  c->size = n;
  c->identity = 1;
  for (int i = 0; i < n; ++i) {
    if (OMPI_SUCCESS != mtl_rdmx_member(group, i, &to_world[i])) {
      opal_show_help(MTL_RDMX_HELP_FILE, "other job", true, ompi_process_info.nodename,
                     ompi_mtl_rdmx.rank);
      free(to_world);
      free(c);
      return OMPI_ERR_NOT_SUPPORTED;
    }
    if (to_world[i] != i) c->identity = 0;
  }
  if (c->identity) {
    free(to_world);
  } else {
    c->to_world = to_world;
    c->from_world = malloc((size_t)ompi_mtl_rdmx.size * sizeof *c->from_world);
    if (NULL == c->from_world) goto no_memory;
    for (int32_t w = 0; w < ompi_mtl_rdmx.size; ++w) c->from_world[w] = -1;
    for (int i = 0; i < n; ++i) c->from_world[to_world[i]] = i;
  }
  comm->c_pml_comm = (struct mca_pml_comm_t*)c;
  return OMPI_SUCCESS;

no_memory:
  if (c) free(c->from_world);
  free(c);
  free(to_world);
  return OMPI_ERR_OUT_OF_RESOURCE;
}

int mtl_rdmx_del_comm(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm) {
  (void)mtl;
  mtl_rdmx_comm_t* c = (mtl_rdmx_comm_t*)comm->c_pml_comm;
  comm->c_pml_comm = NULL;
  if (NULL == c) return OMPI_SUCCESS;
  free(c->to_world);
  free(c->from_world);
  free(c);
  return OMPI_SUCCESS;
}

/* For a communicator add_comm has not seen (not expected with pml cm). */
int32_t mtl_rdmx_world_rank_slow(struct ompi_communicator_t* comm, int rank) {
  int32_t w = -1;
  if (OMPI_SUCCESS != mtl_rdmx_member(comm->c_remote_group, rank, &w)) return -1;
  return w;
}

int mtl_rdmx_comm_rank_slow(struct ompi_communicator_t* comm, int32_t world_rank) {
  ompi_group_t* group = comm->c_remote_group;
  for (int i = 0; i < group->grp_proc_count; ++i) {
    int32_t w = -1;
    if (OMPI_SUCCESS == mtl_rdmx_member(group, i, &w) && w == world_rank) return i;
  }
  return MPI_UNDEFINED;
}
