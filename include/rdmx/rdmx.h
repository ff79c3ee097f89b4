/*
 * rdmx — RDMA message passing for MPI.
 *
 * The public C API. A context is one rank's endpoint on one fabric; it matches
 * MPI-style messages (context id, source, tag) and moves them eagerly over SENDs
 * or by rendezvous over RDMA READs. Everything is non-blocking: operations return
 * a request that completes through rdmx_progress().
 *
 * Threading: a context is not internally locked. Calls on one context must be
 * serialised by the caller; different contexts are independent.
 */
#ifndef RDMX_RDMX_H
#define RDMX_RDMX_H

#include <stddef.h>
#include <stdint.h>

#if defined(RDMX_BUILDING_LIBRARY)
#define RDMX_API __attribute__((visibility("default")))
#else
#define RDMX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. Zero is success; every error is negative. */
typedef enum rdmx_status {
  RDMX_OK = 0,
  RDMX_ERR_INVALID = -1,     /* an argument or setting is out of range */
  RDMX_ERR_NO_MEMORY = -2,   /* allocation or registration failed */
  RDMX_ERR_NO_DEVICE = -3,   /* the requested fabric is not available */
  RDMX_ERR_UNREACHABLE = -4, /* the peer's address cannot be resolved or reached */
  RDMX_ERR_REJECTED = -5,    /* the peer rejected the connection */
  RDMX_ERR_PEER_LOST = -6,   /* the connection failed or the peer vanished */
  RDMX_ERR_TRUNCATED = -7,   /* the receive buffer was smaller than the message */
  RDMX_ERR_CANCELLED = -8,   /* the request was cancelled */
  RDMX_ERR_TIMEOUT = -9,     /* a bounded wait ran out */
  RDMX_ERR_AGAIN = -10,      /* no resource right now; try again after progress */
  RDMX_ERR_PROTOCOL = -11,   /* a peer sent something rdmx does not accept */
  RDMX_ERR_FABRIC = -12,     /* the fabric library reported an error */
  RDMX_ERR_UNSUPPORTED = -13 /* not supported by this build or fabric */
} rdmx_status_t;

/* Wildcards for receives and probes. ANY_TAG matches tags >= 0 only: negative tags
 * are legal (MPI libraries use them internally) and are matched exactly. */
#define RDMX_ANY_SOURCE (-1)
#define RDMX_ANY_TAG INT32_MIN

typedef struct rdmx_context rdmx_context_t;
typedef struct rdmx_request rdmx_request_t;
typedef struct rdmx_message rdmx_message_t; /* a message claimed by rdmx_improbe */

/* What a completed receive (or a probe) reports. */
typedef struct rdmx_status_info {
  int32_t source;
  int32_t tag;
  uint64_t length;      /* bytes delivered (receive) or the message's length (probe) */
  uint64_t sent_length; /* the message's full length as sent */
  int error;            /* RDMX_OK, RDMX_ERR_TRUNCATED, RDMX_ERR_CANCELLED, ... */
  uint32_t context_id;  /* receive, probe: the message's context id (with tag, the high and
                         * low halves of its 64-bit tag: rdmx_irecv_tagged); send: 0 */
} rdmx_status_info_t;

/* Called once when a request completes, from inside rdmx_progress (or the call that
 * completed it). The request stays valid until rdmx_request_free. */
typedef void (*rdmx_completion_fn)(rdmx_request_t* req, const rdmx_status_info_t* status,
                                   void* user);

/* Send flags. */
#define RDMX_SEND_SYNC 0x1u /* complete only once the receiver has matched the message */
/* A send that is complete when rdmx_isend returns (a small message that went straight
 * onto an open connection) makes no request: *req is set to NULL and the callback is
 * not called. Any other send makes its request as usual. */
#define RDMX_SEND_NO_REQUEST_IF_DONE 0x2u

/* Settings. Every RDMX_* setting is declared once inside rdmx; these calls describe
 * them (for tools, documentation and MPI parameters) and set them without text joined
 * by hand. A value comes from, last one winning: the declared default, the RDMX_*
 * environment variable, an rdmx_settings_t given to rdmx_init, rdmx_init_params.fabric. */
typedef enum rdmx_setting_type {
  RDMX_SETTING_INT = 0,    /* an integer from min to max, written in plain decimal digits */
  RDMX_SETTING_CHOICE = 1, /* one of choices */
  RDMX_SETTING_TEXT = 2    /* text; some settings check its form (see accepted) */
} rdmx_setting_type_t;

/* rdmx_setting_desc_t.flags */
#define RDMX_SETTING_STANDALONE 0x1u /* read by rdmx_init_bootstrap only, not by rdmx_init */
#define RDMX_SETTING_NO_DEFAULT 0x2u /* unset unless given (default_text is "") */
#define RDMX_SETTING_SECRET 0x4u     /* a secret: never printed, echoed or made an MCA parameter */

typedef struct rdmx_setting_desc {
  const char* name;           /* the environment variable: "RDMX_EAGER_LIMIT" */
  const char* key;            /* lower case, without "RDMX_": "eager_limit" */
  rdmx_setting_type_t type;   /* how a value is read */
  int64_t default_int;        /* INT: the default */
  const char* default_text;   /* the default as text ("8192", "auto"; "" for none) */
  int64_t min, max;           /* INT: the accepted range, inclusive */
  const char* const* choices; /* CHOICE: the accepted values, NULL-terminated; else NULL */
  const char* accepted;       /* what a value must be, in words */
  const char* help;           /* one line: what the setting does */
  const char* owner;          /* the part that reads it: core, bootstrap, loopback, verbs, ofi */
  uint32_t flags;             /* RDMX_SETTING_* */
} rdmx_setting_desc_t;

/* Every setting this rdmx declares (the same in every build, whatever backends it has). */
RDMX_API size_t rdmx_setting_count(void);
/* Fills desc with setting i (0 <= i < rdmx_setting_count()); the strings are static. */
RDMX_API int rdmx_setting_get(size_t i, rdmx_setting_desc_t* desc);
/* Fills desc with the setting called name ("RDMX_SRQ"); RDMX_ERR_INVALID if none is. */
RDMX_API int rdmx_setting_find(const char* name, rdmx_setting_desc_t* desc);

/* Values for some settings, handed to rdmx_init over the environment. Each value is
 * checked when it is set: RDMX_ERR_INVALID with rdmx_last_error(NULL) naming the setting,
 * the value and what is accepted. */
typedef struct rdmx_settings rdmx_settings_t;
RDMX_API int rdmx_settings_create(rdmx_settings_t** settings);
RDMX_API void rdmx_settings_free(rdmx_settings_t* settings);
/* A value as text, read as the environment variable would be ("8192", "ofi"). */
RDMX_API int rdmx_settings_set(rdmx_settings_t* settings, const char* name, const char* value);
/* An INT setting's value. */
RDMX_API int rdmx_settings_set_int(rdmx_settings_t* settings, const char* name, int64_t value);

typedef struct rdmx_init_params {
  int32_t rank;                    /* this process's rank, 0..size-1 */
  int32_t size;                    /* number of ranks */
  const char* fabric;              /* NULL: RDMX_FABRIC, else "auto"; or loopback|verbs|ofi */
  uint64_t job_key;                /* shared by all ranks of a job: a label (0 too) that keys
                                      connections when the job has no secret */
  const rdmx_settings_t* settings; /* NULL, or values applied over the environment; the
                                      caller keeps it (rdmx_init only reads it) */
} rdmx_init_params_t;

/* Log lines. rdmx writes its log (errors, and more with RDMX_VERBOSE) to stderr unless a
 * handler is set; a host with its own log (an MPI library) takes them instead. level:
 * 0 error, 1 warning, 2 connections, 3 debug; rank: this process's rank, or -1 before
 * it is known; line: the message, without a prefix or newline. Process-wide; the handler
 * may be called from any thread that calls into rdmx, and must not call rdmx. NULL
 * restores stderr. */
typedef void (*rdmx_log_fn)(int level, int32_t rank, const char* line, void* user);
RDMX_API void rdmx_set_log_handler(rdmx_log_fn fn, void* user);

/* Counters for tests, tools and benchmarks. */
typedef struct rdmx_stats {
  uint64_t eager_sends;
  uint64_t inline_sends;
  uint64_t rndv_sends;
  uint64_t rdma_reads;
  uint64_t max_reads_outstanding; /* high-water mark of reads in flight on one connection */
  uint64_t min_read_depth;        /* smallest negotiated initiator depth seen (0: none) */
  uint64_t credit_messages;       /* explicit credit returns */
  uint64_t credit_stalls;         /* sends held for lack of credits (or of room in the
                                     queue of a fabric that paces small messages) */
  uint64_t unexpected;            /* messages that arrived before their receive */
  uint64_t connections;
  uint64_t segmented_sends; /* mid-size messages sent in segments (RDMX_MIDSIZE_LIMIT) */
  /* Rendezvous buffers and the registration cache (RDMX_RCACHE). */
  uint64_t rcache_hits;          /* a cached registration covered the buffer */
  uint64_t rcache_misses;        /* none did: registered (and cached) */
  uint64_t rcache_evictions;     /* unused registrations dropped beyond RDMX_RCACHE_SIZE */
  uint64_t rcache_invalidations; /* registrations dropped because their memory went */
  uint64_t rcache_registrations; /* memory registrations made for rendezvous, cached or not */
  /* READ windows halved: a READ took at least its path's retransmission timeout. */
  uint64_t read_backoffs;
  /* Eager messages and segments sent from the caller's buffer instead of a copy: the
     fabric sends from memory it did not register (libfabric tcp). */
  uint64_t in_place_sends;
  /* Messages that took no receive buffer: the fabric carried them in its own queue
     entry (shared memory, up to 16 bytes of payload). */
  uint64_t unbuffered_recvs;
  /* Requests made and not yet released, at the time of the call (not a counter). */
  uint64_t requests_in_use;
  /* Shared memory: reads split with their sender (it may copy the back half), and back
     halves this side copied into a peer's buffer (docs/shm.md, split reads). */
  uint64_t split_reads;
  uint64_t split_halves_served;
  /* Connections closed by agreement with their peer, idle, past RDMX_MAX_CONNECTIONS
     (on either side), and connections made again (on either side) with a peer whose
     connection was so closed before. */
  uint64_t connection_closes;
  uint64_t connection_reopens;
  /* Connections made or being made, at the time of the call (not a counter). */
  uint64_t connections_live;
  /* At the time of the call: connections whose resources this rank still holds (live,
     or ended and not yet given back to the fabric), and the bytes of receive buffers
     they hold (not the shared receive queue's). */
  uint64_t connections_held;
  uint64_t receive_buffer_bytes;
  /* Connects tried again after the peer refused for want of resources (with backoff). */
  uint64_t connect_retries;
  /* CPU time (ns) the initialising thread spent in the fabric library's own discovery:
     libfabric's fi_getinfo, which initialises every provider built into it (0 on other
     fabrics). Part of rdmx_init's cost that rdmx does not control. */
  uint64_t library_discovery_ns;
  /* The shared receive pool (RDMX_SRQ): its buffers' bytes at the time of the call (0
     without one), and the times it grew because the fabric found it running low (verbs:
     IBV_EVENT_SRQ_LIMIT_REACHED). */
  uint64_t shared_receive_bytes;
  uint64_t shared_receive_growths;
  /* Unexpected eager messages' payload bytes held at the time of the call, and the times
     this rank, over RDMX_UNEXPECTED_LIMIT, asked a peer to send by rendezvous. */
  uint64_t unexpected_bytes;
  uint64_t rendezvous_asks;
  /* Closes this side proposed past RDMX_MAX_CONNECTIONS, agreed or not. A proposal the
     peer refused, or that its messages overtook, is not made again on that connection
     for 100 ms. */
  uint64_t close_proposals;
} rdmx_stats_t;

RDMX_API int rdmx_init(const rdmx_init_params_t* params, rdmx_context_t** ctx);
/* Starts a rank without MPI, initialises the context over RDMX_FABRIC and adds every
 * peer. Under a PMIx launcher (mpirun, prterun, srun --mpi=pmix) the rank, the size and
 * a job secret come from PMIx and addresses are exchanged through it; otherwise it
 * reads RDMX_RANK, RDMX_SIZE and RDMX_BOOTSTRAP=host:port (rank 0 listens there, the
 * others connect; rdmx_launch starts local ranks with these set).
 * RDMX_BOOTSTRAP_METHOD=auto|pmix|socket chooses. Waits at most
 * RDMX_BOOTSTRAP_TIMEOUT_MS for the other ranks; rdmx_last_error(NULL) says why it
 * failed (over sockets, which ranks never came). */
RDMX_API int rdmx_init_bootstrap(rdmx_context_t** ctx);
RDMX_API int rdmx_finalize(rdmx_context_t* ctx);
/* This context's rank and the job's size (-1 and 0 for NULL). */
RDMX_API int32_t rdmx_context_rank(rdmx_context_t* ctx);
RDMX_API int32_t rdmx_context_size(rdmx_context_t* ctx);

/* This context's address, to be given to every peer's rdmx_add_peer. */
RDMX_API int rdmx_address(rdmx_context_t* ctx, void* buf, size_t* len);
RDMX_API int rdmx_add_peer(rdmx_context_t* ctx, int32_t rank, const void* addr, size_t len);

RDMX_API int rdmx_isend(rdmx_context_t* ctx, int32_t dest, uint32_t context_id, int32_t tag,
                        const void* buf, uint64_t len, uint32_t flags, rdmx_completion_fn cb,
                        void* user, rdmx_request_t** req);
RDMX_API int rdmx_irecv(rdmx_context_t* ctx, int32_t source, uint32_t context_id, int32_t tag,
                        void* buf, uint64_t len, rdmx_completion_fn cb, void* user,
                        rdmx_request_t** req);

/* Tagged matching as libfabric defines it: one 64-bit tag, the context id in its high
 * 32 bits and the tag in its low 32, as rdmx_isend would send them, matched under an
 * ignore mask (a set bit need not match). Every tag value is exact here, RDMX_ANY_TAG's
 * too; source may be RDMX_ANY_SOURCE. A receive under a non-zero mask is kept in a list
 * in post order rather than in a hash index: its cost grows with the receives under a
 * mask that wait before it (and, unexpected, with the messages that wait). The status
 * gives the message's tag in context_id and tag. Ordering is MPI's: between one sender's
 * messages that a receive could match, the oldest. */
RDMX_API int rdmx_isend_tagged(rdmx_context_t* ctx, int32_t dest, uint64_t tag, const void* buf,
                               uint64_t len, uint32_t flags, rdmx_completion_fn cb, void* user,
                               rdmx_request_t** req);
RDMX_API int rdmx_irecv_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore,
                               void* buf, uint64_t len, rdmx_completion_fn cb, void* user,
                               rdmx_request_t** req);
RDMX_API int rdmx_iprobe_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore,
                                int* found, rdmx_status_info_t* status);
RDMX_API int rdmx_improbe_tagged(rdmx_context_t* ctx, int32_t source, uint64_t tag, uint64_t ignore,
                                 int* found, rdmx_message_t** msg, rdmx_status_info_t* status);

RDMX_API int rdmx_iprobe(rdmx_context_t* ctx, int32_t source, uint32_t context_id, int32_t tag,
                         int* found, rdmx_status_info_t* status);
RDMX_API int rdmx_improbe(rdmx_context_t* ctx, int32_t source, uint32_t context_id, int32_t tag,
                          int* found, rdmx_message_t** msg, rdmx_status_info_t* status);
RDMX_API int rdmx_imrecv(rdmx_context_t* ctx, rdmx_message_t* msg, void* buf, uint64_t len,
                         rdmx_completion_fn cb, void* user, rdmx_request_t** req);
/* Cancels an unmatched receive (it completes with RDMX_ERR_CANCELLED); a matched
 * receive or a send is left to complete normally. */
RDMX_API int rdmx_cancel(rdmx_context_t* ctx, rdmx_request_t* req);

RDMX_API int rdmx_test(rdmx_request_t* req, int* done, rdmx_status_info_t* status);
/* Waits with progress; timeout_ms < 0 waits until done or the peer is lost. It polls
 * while the fabric has work, and once it has found none for a short while (about
 * 50 microseconds) it sleeps on the fabric's wait object (libfabric's file descriptors,
 * the verbs completion channel) between polls, so that a waiting rank leaves the
 * processor to others. */
RDMX_API int rdmx_wait(rdmx_context_t* ctx, rdmx_request_t* req, int timeout_ms,
                       rdmx_status_info_t* status);
RDMX_API void rdmx_request_free(rdmx_context_t* ctx, rdmx_request_t* req);
/* When rdmx releases a request (rdmx_set_request_release). RDMX_RELEASE_ON_FREE, the
 * default: a request stays valid until rdmx_request_free. RDMX_RELEASE_AFTER_CALLBACK:
 * a request made with a completion callback is released by rdmx as soon as its callback
 * returns, so the callback's req is its last use: it may be cancelled before then, but
 * never passed to rdmx_request_free, rdmx_test or rdmx_wait. For callers that learn of
 * completions only through the callback (an MPI library's own requests), which save a
 * call per request. A request keeps the rule it was made under. */
#define RDMX_RELEASE_ON_FREE 0
#define RDMX_RELEASE_AFTER_CALLBACK 1
RDMX_API int rdmx_set_request_release(rdmx_context_t* ctx, int rule);

/* Drives the fabric; returns the number of events handled (>= 0) or an error. */
RDMX_API int rdmx_progress(rdmx_context_t* ctx);
/* For callers that drive progress themselves (an MPI library's progress loop): sleeps
 * until the fabric may have work for rdmx_progress, or for at most timeout_ms (0: not
 * at all). It may return early; call rdmx_progress after it. A fabric whose wakeup must
 * be armed first returns at once from the first call after activity, having armed it,
 * so call it only after rdmx_progress found nothing. Returns RDMX_OK or an error. */
RDMX_API int rdmx_wait_event(rdmx_context_t* ctx, int timeout_ms);

RDMX_API int rdmx_get_stats(rdmx_context_t* ctx, rdmx_stats_t* stats);
/* Tells rdmx that [addr, addr + len) is about to be unmapped, remapped or discarded:
 * cached registrations of those pages are dropped in every context before they are
 * used again (RDMX_RCACHE). Callable from any thread, also from a signal handler; it
 * takes no lock and allocates nothing. A memory hook that sees every release (Open MPI's
 * opal_mem_hooks_register_release, which the component uses) calls it before the memory
 * goes. */
RDMX_API void rdmx_memory_released(const void* addr, size_t len);
RDMX_API const char* rdmx_fabric_name(rdmx_context_t* ctx);
/* Gives the context the job secret (16 to 64 bytes, the same on every rank and known to
 * no one else), before its first connection: connections then prove membership with it
 * (a MAC in the connection private data). With RDMX_AUTH=secret and no RDMX_JOB_SECRET,
 * connections wait for this call (at most RDMX_CONNECT_TIMEOUT_MS). */
RDMX_API int rdmx_set_job_secret(rdmx_context_t* ctx, const void* secret, size_t len);
/* The path to rank's peer once its address is added: "shm" (shared memory, the peer is
 * on this host) or the network fabric's name ("ofi", "verbs", "loopback"); "" if rank
 * has no address or is out of range, "self" for this rank. A context with several RDMA
 * devices (RDMX_VERBS_DEVICE=a,b or all) names the device too once a connection to the
 * peer exists: "verbs:mlx5_1". */
RDMX_API const char* rdmx_peer_fabric(rdmx_context_t* ctx, int32_t rank);
RDMX_API const char* rdmx_strerror(int status);
/* The last error's explanation in words (peer, cause), or "" if none. With a NULL
 * context: why the last rdmx_init or rdmx_settings_set* on this thread failed. */
RDMX_API const char* rdmx_last_error(rdmx_context_t* ctx);

/* Every RDMX_* setting with its default and a one-line description, one per line (the
 * descriptors above, as text). */
RDMX_API void rdmx_print_settings(void* file /* FILE* */);

#ifdef __cplusplus
}
#endif

#endif /* RDMX_RDMX_H */
