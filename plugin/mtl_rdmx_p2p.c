/*
 * Point-to-point through rdmx: send/isend (standard, synchronous, buffered, ready),
 * irecv, iprobe, improbe/imrecv, cancel, and completions turned into MPI statuses.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mtl_rdmx.h"
#include "ompi/errhandler/errcode-internal.h"
#include "ompi/mca/mtl/base/mtl_base_datatype.h"
#include "ompi/message/message.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

#define M (&ompi_mtl_rdmx)

/* rdmx completion callback: runs inside an rdmx call, under the lock; only queues. rdmx
 * releases its request when this returns (RDMX_RELEASE_AFTER_CALLBACK). */
static void mtl_rdmx_completed(rdmx_request_t* rreq, const rdmx_status_info_t* status, void* user) {
  (void)rreq;
  mtl_rdmx_request_t* r = (mtl_rdmx_request_t*)user;
  r->rreq = NULL;
  r->status = *status;
  r->state = MTL_RDMX_COMPLETED;
  r->next = NULL;
  if (M->done_tail)
    M->done_tail->next = r;
  else
    M->done_head = r;
  M->done_tail = r;
}

/* Under the lock, right after an rdmx call: hands over the requests completed meanwhile,
 * to be finished without the lock. */
static mtl_rdmx_request_t* mtl_rdmx_take_completed(void) {
  mtl_rdmx_request_t* list = M->done_head;
  M->done_head = M->done_tail = NULL;
  return list;
}

static int mtl_rdmx_mpi_error(int rdmx_status) {
  return ompi_errcode_get_mpi_code(mtl_rdmx_error(rdmx_status));
}

static void mtl_rdmx_finish_recv(mtl_rdmx_request_t* r) {
  ompi_status_public_t* s = &r->super.ompi_req->req_status;
  const rdmx_status_info_t* st = &r->status;
  if (RDMX_ERR_CANCELLED == st->error) {
    s->_cancelled = true;
    if (r->free_after) free(r->buf);
    return;
  }
  if (st->source >= 0 && st->source < M->size)
    s->MPI_SOURCE = mtl_rdmx_comm_rank(r->comm, st->source);
  s->MPI_TAG = st->tag;
  s->_ucount = st->length;
  s->MPI_ERROR = RDMX_OK == st->error ? OMPI_SUCCESS : mtl_rdmx_mpi_error(st->error);
  if (r->free_after) {
    if (st->length > 0)
      ompi_mtl_datatype_unpack(r->convertor, r->buf, st->length); /* frees buf */
    else
      free(r->buf);
  }
}

/* pml cm leaves a send's MPI_ERROR as the request's last user left it. */
static inline void mtl_rdmx_finish_send(mtl_rdmx_request_t* r) {
  if (r->free_after) free(r->buf);
  if (NULL != r->super.ompi_req)
    r->super.ompi_req->req_status.MPI_ERROR =
        RDMX_OK == r->status.error ? OMPI_SUCCESS : mtl_rdmx_mpi_error(r->status.error);
}

/* Outside the lock: statuses, unpacking, then Open MPI's completion callback, which
 * may free or reuse the request (so next is read first). */
static void mtl_rdmx_finish(mtl_rdmx_request_t* list) {
  while (list) {
    mtl_rdmx_request_t* r = list;
    list = r->next;
    if (MTL_RDMX_RECV == r->kind)
      mtl_rdmx_finish_recv(r);
    else
      mtl_rdmx_finish_send(r);
    r->super.completion_callback(&r->super);
  }
}

static void mtl_rdmx_call_failed(const char* what, int rc) {
  opal_output_verbose(1, M->output, "mtl rdmx: rank %d: %s: %s (%s)", M->rank, what,
                      rdmx_strerror(rc), rdmx_last_error(M->ctx));
}

static uint64_t mtl_rdmx_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Progress found nothing. With RDMX_IDLE=sleep (mtl_rdmx_idle), a process that has
 * found nothing for MTL_RDMX_SPIN_NS sleeps on the fabric for up to a millisecond, so
 * that other programs get the processor. Not with MPI_THREAD_MULTIPLE: the sleep holds
 * the lock every rdmx call takes. */
#define MTL_RDMX_SPIN_NS 50000u
static void mtl_rdmx_idle(void) {
  if (!M->sleep_when_idle || ompi_mpi_thread_multiple) return;
  uint64_t now = mtl_rdmx_now_ns();
  if (0 == M->idle_since_ns) {
    M->idle_since_ns = now;
  } else if (now - M->idle_since_ns > MTL_RDMX_SPIN_NS) {
    rdmx_wait_event(M->ctx, 1);
  }
}

int mtl_rdmx_progress(void) {
  if (OPAL_THREAD_TRYLOCK(&M->lock)) return 0;
  int n = rdmx_progress(M->ctx);
  if (n > 0)
    M->idle_since_ns = 0;
  else if (0 == n)
    mtl_rdmx_idle();
  mtl_rdmx_request_t* done = mtl_rdmx_take_completed();
  OPAL_THREAD_UNLOCK(&M->lock);
  mtl_rdmx_finish(done);
  return n > 0 ? n : 0;
}

/* Every rdmx call ends the same way: report a failed call, collect the completions it
 * produced while the lock was held, and hand them to Open MPI outside the lock.
 * Called with M->lock held; releases it. The common end, a call that succeeded and
 * completed nothing, is inline. */
static int mtl_rdmx_end_call_slow(int rc, const char* call) {
  if (OPAL_UNLIKELY(RDMX_OK != rc)) mtl_rdmx_call_failed(call, rc);
  mtl_rdmx_request_t* done = mtl_rdmx_take_completed();
  OPAL_THREAD_UNLOCK(&M->lock);
  mtl_rdmx_finish(done);
  return rc;
}

static inline int mtl_rdmx_end_call(int rc, const char* call) {
  if (OPAL_LIKELY(RDMX_OK == rc && NULL == M->done_head)) {
    OPAL_THREAD_UNLOCK(&M->lock);
    return rc;
  }
  return mtl_rdmx_end_call_slow(rc, call);
}

/* A receive: what its completion and a cancel read, and where it lands (the user's
 * memory, or a buffer to unpack from). */
static inline int mtl_rdmx_prepare_recv(mtl_rdmx_request_t* r, struct ompi_communicator_t* comm,
                                        struct opal_convertor_t* convertor) {
  r->kind = MTL_RDMX_RECV;
  r->state = MTL_RDMX_POSTED;
  r->comm = comm;
  r->convertor = convertor;
  r->rreq = NULL;
  return ompi_mtl_datatype_recv_buf(convertor, &r->buf, &r->length, &r->free_after);
}

/* A request that could not start (rdmx refused it, or its buffer or peer could not be
 * set up) completes at once with the error, through Open MPI's callback like any other
 * completion: returning the error instead would leave a persistent request that
 * MPI_Start(all) began active for ever. */
static int mtl_rdmx_fail_start(mtl_rdmx_request_t* r, int rdmx_status) {
  r->status.source = -1;
  r->status.tag = 0;
  r->status.length = 0;
  r->status.sent_length = 0;
  r->status.error = rdmx_status;
  r->state = MTL_RDMX_COMPLETED;
  r->next = NULL;
  mtl_rdmx_finish(r);
  return OMPI_SUCCESS;
}

/* The bytes a send hands rdmx. pml cm gives the MTL two kinds of convertor for a
 * contiguous layout: for MPI_Send/MPI_Isend a shortcut whose pBaseBuf already points at
 * the data (buf + true_lb, CONVERTOR_SEND not set), and for persistent and buffered
 * sends a convertor fully prepared for sending, whose pBaseBuf is the buffer argument.
 * Open MPI 4.1's ompi_mtl_datatype_pack returns pBaseBuf for both, which for the second
 * kind is wrong whenever the data does not start at displacement 0: with MPI_BOTTOM and
 * absolute addresses it is NULL. So a prepared contiguous convertor is read from its
 * true lower bound, as opal_convertor_get_current_pointer does; the rest is as before. */
static int mtl_rdmx_send_buf(struct opal_convertor_t* convertor, void** buf, size_t* len,
                             bool* free_after) {
#if !(OPAL_ENABLE_HETEROGENEOUS_SUPPORT)
  if (convertor->pDesc && (convertor->flags & CONVERTOR_SEND) &&
      !(convertor->flags & CONVERTOR_COMPLETED) &&
      opal_datatype_is_contiguous_memory_layout(convertor->pDesc, convertor->count)) {
    *free_after = false;
    *len = convertor->local_size;
    opal_convertor_get_current_pointer(convertor, buf);
    return OMPI_SUCCESS;
  }
#endif
  return ompi_mtl_datatype_pack(convertor, buf, len, free_after);
}

/* A send. Only what a send's completion reads is set: its kind, and the buffer to free
 * (mtl_rdmx_send_buf). */
int mtl_rdmx_isend(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int dest,
                   int tag, struct opal_convertor_t* convertor, mca_pml_base_send_mode_t mode,
                   bool blocking, mca_mtl_request_t* mtl_request) {
  (void)mtl;
  (void)blocking;
  mtl_rdmx_request_t* r = (mtl_rdmx_request_t*)mtl_request;
  int32_t peer = mtl_rdmx_world_rank(comm, dest);
  if (OPAL_UNLIKELY(peer < 0)) return OMPI_ERR_BAD_PARAM;
  r->kind = MTL_RDMX_SEND;
  r->free_after = false;
  if (OPAL_UNLIKELY(!__atomic_load_n(&M->peer_added[peer], __ATOMIC_ACQUIRE)) &&
      OMPI_SUCCESS != mtl_rdmx_add_peer(peer))
    return mtl_rdmx_fail_start(r, RDMX_ERR_UNREACHABLE);
  if (OPAL_UNLIKELY(OMPI_SUCCESS !=
                    mtl_rdmx_send_buf(convertor, &r->buf, &r->length, &r->free_after)))
    return mtl_rdmx_fail_start(r, RDMX_ERR_NO_MEMORY);
  /* Buffered sends were already copied by the PML and ready sends need no handshake:
   * both go as standard sends. A send rdmx completes at once makes no rdmx request:
   * it is finished here, without a callback, a queue or a release. */
  uint32_t flags = RDMX_SEND_NO_REQUEST_IF_DONE;
  if (MCA_PML_BASE_SEND_SYNCHRONOUS == mode) flags |= RDMX_SEND_SYNC;
  rdmx_request_t* rreq = NULL;
  OPAL_THREAD_LOCK(&M->lock);
  int rc = rdmx_isend(M->ctx, peer, mtl_rdmx_cid(comm), tag, r->buf, r->length, flags,
                      mtl_rdmx_completed, r, &rreq);
  rc = mtl_rdmx_end_call(rc, "rdmx_isend");
  if (OPAL_UNLIKELY(RDMX_OK != rc)) return mtl_rdmx_fail_start(r, rc);
  if (OPAL_LIKELY(NULL == rreq)) {
    r->status.error = RDMX_OK;
    mtl_rdmx_finish_send(r);
    r->super.completion_callback(&r->super);
  }
  return OMPI_SUCCESS;
}

static void mtl_rdmx_blocking_done(mca_mtl_request_t* req) {
  __atomic_store_n(&((mtl_rdmx_request_t*)req)->done, 1, __ATOMIC_RELEASE);
}

int mtl_rdmx_send(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int dest,
                  int tag, struct opal_convertor_t* convertor, mca_pml_base_send_mode_t mode) {
  mtl_rdmx_request_t r;
  memset(&r, 0, sizeof r);
  r.super.ompi_req = NULL;
  r.super.completion_callback = mtl_rdmx_blocking_done;
  int ret = mtl_rdmx_isend(mtl, comm, dest, tag, convertor, mode, true, &r.super);
  if (OMPI_SUCCESS != ret) return ret;
  while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) opal_progress();
  return mtl_rdmx_error(r.status.error);
}

int mtl_rdmx_irecv(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                   int tag, struct opal_convertor_t* convertor, mca_mtl_request_t* mtl_request) {
  (void)mtl;
  mtl_rdmx_request_t* r = (mtl_rdmx_request_t*)mtl_request;
  int32_t source = MPI_ANY_SOURCE == src ? RDMX_ANY_SOURCE : mtl_rdmx_world_rank(comm, src);
  int32_t rtag = MPI_ANY_TAG == tag ? RDMX_ANY_TAG : tag;
  if (OPAL_UNLIKELY(source < 0 && RDMX_ANY_SOURCE != source)) return OMPI_ERR_BAD_PARAM;
  if (OPAL_UNLIKELY(OMPI_SUCCESS != mtl_rdmx_prepare_recv(r, comm, convertor)))
    return mtl_rdmx_fail_start(r, RDMX_ERR_NO_MEMORY);
  OPAL_THREAD_LOCK(&M->lock);
  int rc = mtl_rdmx_end_call(rdmx_irecv(M->ctx, source, mtl_rdmx_cid(comm), rtag, r->buf, r->length,
                                        mtl_rdmx_completed, r, &r->rreq),
                             "rdmx_irecv");
  if (OPAL_UNLIKELY(RDMX_OK != rc)) return mtl_rdmx_fail_start(r, rc);
  return OMPI_SUCCESS;
}

/* A probe fills the caller's status directly, and MPI's single-completion calls leave
 * its MPI_ERROR as the caller set it. */
static void mtl_rdmx_probe_status(struct ompi_communicator_t* comm, const rdmx_status_info_t* st,
                                  struct ompi_status_public_t* status) {
  if (MPI_STATUS_IGNORE == status) return;
  status->MPI_SOURCE = mtl_rdmx_comm_rank(comm, st->source);
  status->MPI_TAG = st->tag;
  status->_ucount = st->length;
  status->_cancelled = false;
}

/* A probe that finds nothing runs Open MPI's whole progress engine, as ob1's does, not
 * only rdmx's: a program that polls with MPI_Iprobe must also see its nonblocking
 * collectives advance and the runtime's events handled (under ULFM, a failure's report). */
int mtl_rdmx_iprobe(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                    int tag, int* flag, struct ompi_status_public_t* status) {
  (void)mtl;
  int32_t source = MPI_ANY_SOURCE == src ? RDMX_ANY_SOURCE : mtl_rdmx_world_rank(comm, src);
  int32_t rtag = MPI_ANY_TAG == tag ? RDMX_ANY_TAG : tag;
  rdmx_status_info_t st;
  int found = 0;
  OPAL_THREAD_LOCK(&M->lock);
  int rc = mtl_rdmx_end_call(rdmx_iprobe(M->ctx, source, mtl_rdmx_cid(comm), rtag, &found, &st),
                             "rdmx_iprobe");
  *flag = RDMX_OK == rc && found;
  if (*flag)
    mtl_rdmx_probe_status(comm, &st, status);
  else
    opal_progress();
  return mtl_rdmx_error(rc);
}

int mtl_rdmx_improbe(struct mca_mtl_base_module_t* mtl, struct ompi_communicator_t* comm, int src,
                     int tag, int* matched, struct ompi_message_t** message,
                     struct ompi_status_public_t* status) {
  (void)mtl;
  int32_t source = MPI_ANY_SOURCE == src ? RDMX_ANY_SOURCE : mtl_rdmx_world_rank(comm, src);
  int32_t rtag = MPI_ANY_TAG == tag ? RDMX_ANY_TAG : tag;
  ompi_message_t* msg = ompi_message_alloc();
  if (NULL == msg) return OMPI_ERR_OUT_OF_RESOURCE;
  rdmx_message_t* rmsg = NULL;
  rdmx_status_info_t st;
  int found = 0;
  OPAL_THREAD_LOCK(&M->lock);
  int rc = mtl_rdmx_end_call(
      rdmx_improbe(M->ctx, source, mtl_rdmx_cid(comm), rtag, &found, &rmsg, &st), "rdmx_improbe");
  if (RDMX_OK != rc || !found) {
    ompi_message_return(msg);
    *matched = 0;
    *message = MPI_MESSAGE_NULL;
    opal_progress(); /* as in mtl_rdmx_iprobe */
    return mtl_rdmx_error(rc);
  }
  msg->comm = comm;
  msg->req_ptr = rmsg;
  msg->peer = mtl_rdmx_comm_rank(comm, st.source);
  msg->count = st.length;
  *matched = 1;
  *message = msg;
  mtl_rdmx_probe_status(comm, &st, status);
  return OMPI_SUCCESS;
}

int mtl_rdmx_imrecv(struct mca_mtl_base_module_t* mtl, struct opal_convertor_t* convertor,
                    struct ompi_message_t** message, mca_mtl_request_t* mtl_request) {
  (void)mtl;
  mtl_rdmx_request_t* r = (mtl_rdmx_request_t*)mtl_request;
  ompi_message_t* msg = *message;
  rdmx_message_t* rmsg = (rdmx_message_t*)msg->req_ptr;
  int rc = mtl_rdmx_prepare_recv(r, msg->comm, convertor);
  ompi_message_return(msg);
  *message = MPI_MESSAGE_NULL;
  if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return mtl_rdmx_fail_start(r, RDMX_ERR_NO_MEMORY);
  OPAL_THREAD_LOCK(&M->lock);
  rc = mtl_rdmx_end_call(
      rdmx_imrecv(M->ctx, rmsg, r->buf, r->length, mtl_rdmx_completed, r, &r->rreq), "rdmx_imrecv");
  if (OPAL_UNLIKELY(RDMX_OK != rc)) return mtl_rdmx_fail_start(r, rc);
  return OMPI_SUCCESS;
}

/* A receive not yet matched completes as cancelled through its callback; a matched
 * receive and any send complete normally (_cancelled stays false). */
int mtl_rdmx_cancel(struct mca_mtl_base_module_t* mtl, mca_mtl_request_t* mtl_request, int flag) {
  (void)mtl;
  (void)flag;
  mtl_rdmx_request_t* r = (mtl_rdmx_request_t*)mtl_request;
  if (MTL_RDMX_RECV != r->kind) return OMPI_SUCCESS;
  int rc = RDMX_OK;
  OPAL_THREAD_LOCK(&M->lock);
  if (MTL_RDMX_POSTED == r->state && NULL != r->rreq) rc = rdmx_cancel(M->ctx, r->rreq);
  return mtl_rdmx_error(mtl_rdmx_end_call(rc, "rdmx_cancel"));
}
