/* bench/verbs_calls.c: a preload library (LD_PRELOAD=bench/.libs/verbs_calls.so) that
 * counts what a process asks of libibverbs, at the boundary every verbs consumer crosses:
 * memory registrations and deregistrations, work requests posted by opcode, and
 * completions reaped by opcode. bench/count-rendezvous runs rdmx and ib_read_bw under it.
 *
 * Registrations are exported functions and are interposed by name. Posting and polling
 * are inline functions of verbs.h that call through the device context's operations
 * table: each context that ibv_open_device returns gets its table's post and poll
 * entries pointed at counting wrappers (rdma_cm opens its devices the same way).
 *
 * At exit the counts are written, one "name value" a line, to the file named by
 * RDMX_VERBS_CALLS (nothing is written without it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum {
  kRegistrations,
  kDeregistrations,
  kPostSendCalls,
  kSends,
  kReads,
  kWrites,
  kOtherWrs,
  kSignaled,
  kRecvsPosted,
  kPollCalls,
  kSendCompletions,
  kReadCompletions,
  kRecvCompletions,
  kOtherCompletions,
  kCompletionErrors,
  kCounts
};

static const char* const kNames[kCounts] = {
    "registrations",    "deregistrations",   "post_send_calls",  "send_wrs",
    "read_wrs",         "write_wrs",         "other_wrs",        "signaled_wrs",
    "recv_wrs",         "poll_calls",        "send_completions", "read_completions",
    "recv_completions", "other_completions", "completion_errors"};

static uint64_t counts[kCounts];
/* Registration calls that libibverbs makes to itself (ibv_reg_mr to ibv_reg_mr_iova2)
 * are counted once: only the outermost call of a thread counts. */
static __thread int in_registration;

static void add(int which, uint64_t n) { __atomic_fetch_add(&counts[which], n, __ATOMIC_RELAXED); }

static void* next(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    fprintf(stderr, "verbs_calls: libibverbs has no %s\n", name);
    abort();
  }
  return fn;
}

/* The device's own entries, the same for every context of one provider. */
static int (*real_post_send)(struct ibv_qp*, struct ibv_send_wr*, struct ibv_send_wr**);
static int (*real_post_recv)(struct ibv_qp*, struct ibv_recv_wr*, struct ibv_recv_wr**);
static int (*real_post_srq_recv)(struct ibv_srq*, struct ibv_recv_wr*, struct ibv_recv_wr**);
static int (*real_poll_cq)(struct ibv_cq*, int, struct ibv_wc*);

static int count_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  add(kPostSendCalls, 1);
  for (struct ibv_send_wr* w = wr; w; w = w->next) {
    switch (w->opcode) {
      case IBV_WR_SEND:
      case IBV_WR_SEND_WITH_IMM:
      case IBV_WR_SEND_WITH_INV: add(kSends, 1); break;
      case IBV_WR_RDMA_READ: add(kReads, 1); break;
      case IBV_WR_RDMA_WRITE:
      case IBV_WR_RDMA_WRITE_WITH_IMM: add(kWrites, 1); break;
      default: add(kOtherWrs, 1);
    }
    if (w->send_flags & IBV_SEND_SIGNALED) add(kSignaled, 1);
  }
  return real_post_send(qp, wr, bad);
}

static uint64_t recv_wrs(const struct ibv_recv_wr* wr) {
  uint64_t n = 0;
  for (; wr; wr = wr->next) ++n;
  return n;
}

static int count_post_recv(struct ibv_qp* qp, struct ibv_recv_wr* wr, struct ibv_recv_wr** bad) {
  add(kRecvsPosted, recv_wrs(wr));
  return real_post_recv(qp, wr, bad);
}

static int count_post_srq_recv(struct ibv_srq* srq, struct ibv_recv_wr* wr,
                               struct ibv_recv_wr** bad) {
  add(kRecvsPosted, recv_wrs(wr));
  return real_post_srq_recv(srq, wr, bad);
}

static int count_poll_cq(struct ibv_cq* cq, int n, struct ibv_wc* wc) {
  int got = real_poll_cq(cq, n, wc);
  add(kPollCalls, 1);
  for (int i = 0; i < got; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) {
      add(kCompletionErrors, 1); /* its opcode is not defined */
      continue;
    }
    if (wc[i].opcode & IBV_WC_RECV)
      add(kRecvCompletions, 1);
    else if (wc[i].opcode == IBV_WC_SEND)
      add(kSendCompletions, 1);
    else if (wc[i].opcode == IBV_WC_RDMA_READ)
      add(kReadCompletions, 1);
    else
      add(kOtherCompletions, 1);
  }
  return got;
}

struct ibv_context* ibv_open_device(struct ibv_device* device) {
  static struct ibv_context* (*real)(struct ibv_device*);
  if (!real) real = (struct ibv_context * (*)(struct ibv_device*)) next("ibv_open_device");
  struct ibv_context* ctx = real(device);
  if (!ctx || ctx->ops.post_send == count_post_send) return ctx;
  real_post_send = ctx->ops.post_send;
  real_post_recv = ctx->ops.post_recv;
  real_post_srq_recv = ctx->ops.post_srq_recv;
  real_poll_cq = ctx->ops.poll_cq;
  ctx->ops.post_send = count_post_send;
  ctx->ops.post_recv = count_post_recv;
  if (real_post_srq_recv) ctx->ops.post_srq_recv = count_post_srq_recv;
  ctx->ops.poll_cq = count_poll_cq;
  return ctx;
}

#define REGISTRATION(name, params, args)            \
  struct ibv_mr* name params {                      \
    static struct ibv_mr*(*real)params;             \
    if (!real) real = next(#name);                  \
    if (!in_registration++) add(kRegistrations, 1); \
    struct ibv_mr* mr = real args;                  \
    --in_registration;                              \
    return mr;                                      \
  }

/* verbs.h defines ibv_reg_mr as a macro over these functions. */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
REGISTRATION(ibv_reg_mr, (struct ibv_pd * pd, void* addr, size_t len, int access),
             (pd, addr, len, access))
REGISTRATION(ibv_reg_mr_iova,
             (struct ibv_pd * pd, void* addr, size_t len, uint64_t iova, int access),
             (pd, addr, len, iova, access))
REGISTRATION(ibv_reg_mr_iova2,
             (struct ibv_pd * pd, void* addr, size_t len, uint64_t iova, unsigned int access),
             (pd, addr, len, iova, access))
REGISTRATION(ibv_reg_dmabuf_mr,
             (struct ibv_pd * pd, uint64_t offset, size_t len, uint64_t iova, int fd, int access),
             (pd, offset, len, iova, fd, access))

int ibv_dereg_mr(struct ibv_mr* mr) {
  static int (*real)(struct ibv_mr*);
  if (!real) real = (int (*)(struct ibv_mr*))next("ibv_dereg_mr");
  add(kDeregistrations, 1);
  return real(mr);
}

__attribute__((destructor)) static void write_counts(void) {
  const char* path = getenv("RDMX_VERBS_CALLS");
  if (!path || !*path) return;
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    return;
  }
  for (int i = 0; i < kCounts; ++i)
    fprintf(f, "%s %llu\n", kNames[i],
            (unsigned long long)__atomic_load_n(&counts[i], __ATOMIC_RELAXED));
  fclose(f);
}
