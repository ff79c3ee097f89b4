/* Point-to-point semantics through the MTL (2 or more ranks): sends to self, wildcards,
 * non-overtaking across eager and rendezvous sizes, synchronous sends, probe and
 * matched probe, cancel, truncation returned to the program, communicator rank
 * translation (split, reversed, intercommunicator), send modes, zero bytes, many
 * requests in flight. */
#include <string.h>
#include <time.h>

#include "mpi_check.h"

#define BIG (1 << 20) /* above every default eager limit */

static int rank, nprocs;

static void fill(char* buf, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i) buf[i] = (char)(seed * 31 + (int)i * 7);
}

static int filled(const char* buf, size_t n, int seed) {
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != (char)(seed * 31 + (int)i * 7)) return 0;
  return 1;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_self(char* a, char* b) {
  SECTION("send to self: small, large unexpected, synchronous");
  int x = rank * 10 + 1, y = -1;
  MPI_Status st;
  CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, rank, 1, &y, 1, MPI_INT, rank, 1, MPI_COMM_WORLD, &st));
  CHECK(y == x && st.MPI_SOURCE == rank && st.MPI_TAG == 1, "y=%d source=%d", y, st.MPI_SOURCE);
  MPI_Request req;
  fill(a, BIG, rank);
  CHECK_MPI(MPI_Isend(a, BIG, MPI_CHAR, rank, 2, MPI_COMM_WORLD, &req));
  CHECK_MPI(MPI_Recv(b, BIG, MPI_CHAR, rank, 2, MPI_COMM_WORLD, &st));
  CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  CHECK(filled(b, BIG, rank), "large self message corrupted");
  CHECK_MPI(MPI_Irecv(&y, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, &req));
  CHECK_MPI(MPI_Ssend(&x, 1, MPI_INT, rank, 3, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Wait(&req, &st));
  CHECK(y == x, "ssend to self delivered %d", y);
  CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, 0, 4, &y, 1, MPI_INT, 0, 4, MPI_COMM_SELF, &st));
  CHECK(y == x && st.MPI_SOURCE == 0, "MPI_COMM_SELF source %d", st.MPI_SOURCE);
}

static void test_wildcards(void) {
  SECTION("ANY_SOURCE / ANY_TAG: status source, tag, count");
  int buf[64];
  if (rank != 0) {
    for (int i = 0; i <= rank; ++i) buf[i] = rank;
    CHECK_MPI(MPI_Send(buf, rank + 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD));
    return;
  }
  int seen[64] = {0};
  for (int i = 1; i < nprocs; ++i) {
    MPI_Status st;
    int count = -1;
    CHECK_MPI(MPI_Recv(buf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    int s = st.MPI_SOURCE;
    CHECK(s > 0 && s < nprocs && !seen[s], "bad or repeated source %d", s);
    seen[s] = 1;
    CHECK(st.MPI_TAG == 100 + s, "tag %d from %d", st.MPI_TAG, s);
    CHECK(count == s + 1 && buf[0] == s && buf[s] == s, "count %d from %d", count, s);
  }
}

static void test_order(char* a, char* b) {
  SECTION("non-overtaking: mixed tags and sizes, posted and unexpected");
  enum { N = 48 };
  if (rank == 1) {
    for (int i = 0; i < N; ++i) {
      size_t len = (i % 3 == 1) ? 65536 : 16;
      fill(a, len, i);
      CHECK_MPI(MPI_Send(a, (int)len, MPI_CHAR, 0, i % 4, MPI_COMM_WORLD));
    }
    int go = 0;
    CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 8; ++i) {
      size_t len = (i % 2) ? 65536 : 16;
      fill(a, len, 100 + i);
      CHECK_MPI(MPI_Send(a, (int)len, MPI_CHAR, 0, 7, MPI_COMM_WORLD));
    }
  } else if (rank == 0) {
    for (int i = 0; i < N; ++i) {
      MPI_Status st;
      int count = 0;
      CHECK_MPI(MPI_Recv(b, BIG, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
      MPI_Get_count(&st, MPI_CHAR, &count);
      size_t len = (i % 3 == 1) ? 65536 : 16;
      CHECK(st.MPI_TAG == i % 4 && (size_t)count == len && filled(b, len, i),
            "message %d: tag %d count %d", i, st.MPI_TAG, count);
    }
    MPI_Request reqs[8];
    char* slots[8];
    for (int i = 0; i < 8; ++i) {
      slots[i] = b + (size_t)i * 65536;
      CHECK_MPI(MPI_Irecv(slots[i], 65536, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &reqs[i]));
    }
    int go = 1;
    CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 8; ++i)
      CHECK(filled(slots[i], (i % 2) ? 65536 : 16, 100 + i), "posted receive %d out of order", i);
  }
}

static void test_ssend(char* a, char* b) {
  SECTION("synchronous send completes only once matched (eager and rendezvous sizes)");
  const int sizes[2] = {8, 65536};
  for (int k = 0; k < 2; ++k) {
    if (rank == 1) {
      MPI_Request req;
      int flag = 0;
      fill(a, (size_t)sizes[k], k);
      CHECK_MPI(MPI_Issend(a, sizes[k], MPI_CHAR, 0, 20, MPI_COMM_WORLD, &req));
      double until = now() + 0.2;
      while (now() < until && !flag) CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
      CHECK(!flag, "MPI_Issend of %d bytes completed before a receive was posted", sizes[k]);
      int go = 1;
      CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 0, 21, MPI_COMM_WORLD));
      CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else if (rank == 0) {
      int go = 0;
      CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 1, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK_MPI(MPI_Recv(b, sizes[k], MPI_CHAR, 1, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      CHECK(filled(b, (size_t)sizes[k], k), "ssend payload");
    }
  }
}

static void test_probe(char* a, char* b) {
  SECTION("probe / iprobe report the message the next receive gets");
  int src = nprocs > 2 ? 2 : 1;
  if (rank == src) {
    double d[37];
    for (int i = 0; i < 37; ++i) d[i] = i * 0.5;
    CHECK_MPI(MPI_Send(d, 37, MPI_DOUBLE, 0, 30, MPI_COMM_WORLD));
  }
  if (rank == 1) {
    int v1 = 1, v2 = 2;
    CHECK_MPI(MPI_Send(&v1, 1, MPI_INT, 0, 32, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(&v2, 1, MPI_INT, 0, 33, MPI_COMM_WORLD));
    fill(a, BIG, 3);
    CHECK_MPI(MPI_Send(a, BIG, MPI_CHAR, 0, 34, MPI_COMM_WORLD));
  }
  if (rank != 0) return;
  MPI_Status st;
  int count = 0, flag = 0;
  CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, 30, MPI_COMM_WORLD, &st));
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK(st.MPI_SOURCE == src && st.MPI_TAG == 30 && count == 37, "probe src %d count %d",
        st.MPI_SOURCE, count);
  CHECK_MPI(MPI_Iprobe(src, 30, MPI_COMM_WORLD, &flag, &st));
  CHECK(flag, "iprobe lost the probed message");
  double d[37];
  CHECK_MPI(MPI_Recv(d, 37, MPI_DOUBLE, src, 30, MPI_COMM_WORLD, &st));
  CHECK(d[36] == 18.0, "probed message payload");
  CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, &flag, &st));
  CHECK(!flag, "iprobe found a message never sent");
  CHECK_MPI(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
  CHECK(st.MPI_TAG == 32, "probe with ANY_TAG saw tag %d before 32", st.MPI_TAG);
  int v = 0;
  CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
  CHECK(v == 1 && st.MPI_TAG == 32, "receive after probe got tag %d", st.MPI_TAG);
  CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 33, MPI_COMM_WORLD, &st));
  do CHECK_MPI(MPI_Iprobe(1, 34, MPI_COMM_WORLD, &flag, &st));
  while (!flag);
  MPI_Get_count(&st, MPI_CHAR, &count);
  CHECK(count == BIG, "iprobe of a rendezvous message: count %d", count);
  CHECK_MPI(MPI_Recv(b, BIG, MPI_CHAR, 1, 34, MPI_COMM_WORLD, &st));
  CHECK(filled(b, BIG, 3), "large probed message");
}

/* MPI_Iprobe makes progress on everything, not only on messages: rank 0 polls with it
 * for a message rank 2 sends only once its MPI_Ibarrier has completed, and with 3 ranks
 * or more that barrier needs rank 0's nonblocking-collective engine to advance a round
 * past its start. Bounded: 20 s. */
static void test_iprobe_progress(void) {
  SECTION("iprobe drives nonblocking collectives: a token sent after an ibarrier arrives");
  if (nprocs < 3) return;
  MPI_Request barrier;
  CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
  int token = 0;
  if (rank == 2) {
    CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
    token = 35;
    CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 35, MPI_COMM_WORLD));
    return;
  }
  if (rank != 0) {
    CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
    return;
  }
  int flag = 0;
  double until = now() + 20;
  while (!flag && now() < until)
    CHECK_MPI(MPI_Iprobe(2, 35, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
  CHECK(flag, "rank 2's token did not arrive in 20 s of MPI_Iprobe: the ibarrier did not advance");
  CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 2, 35, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(token == 35, "token %d", token);
  CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
}

static void test_mprobe(char* a, char* b) {
  SECTION("mprobe / improbe claim the message; mrecv / imrecv receive it");
  if (rank == 1) {
    /* Non-blocking: a claimed message's send may complete only at its mrecv. */
    int v1 = 1, v2 = 2;
    MPI_Request reqs[3];
    fill(a, BIG, 4);
    CHECK_MPI(MPI_Isend(&v1, 1, MPI_INT, 0, 40, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Isend(&v2, 1, MPI_INT, 0, 40, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Isend(a, BIG, MPI_CHAR, 0, 41, MPI_COMM_WORLD, &reqs[2]));
    CHECK_MPI(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE));
  }
  if (rank != 0) return;
  MPI_Message msg;
  MPI_Status st;
  int v = 0, flag = 0, count = 0;
  CHECK_MPI(MPI_Mprobe(1, 40, MPI_COMM_WORLD, &msg, &st));
  CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 40, "mprobe status");
  CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &st));
  CHECK(v == 2, "a receive took the message mprobe claimed (got %d)", v);
  CHECK_MPI(MPI_Mrecv(&v, 1, MPI_INT, &msg, &st));
  CHECK(v == 1 && msg == MPI_MESSAGE_NULL, "mrecv got %d", v);
  do CHECK_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
  while (!flag);
  MPI_Get_count(&st, MPI_CHAR, &count);
  CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 41 && count == BIG, "improbe status");
  MPI_Request req;
  CHECK_MPI(MPI_Imrecv(b, BIG, MPI_CHAR, &msg, &req));
  CHECK_MPI(MPI_Wait(&req, &st));
  CHECK(filled(b, BIG, 4) && st.MPI_SOURCE == 1, "imrecv of a rendezvous message");
}

static void test_cancel(void) {
  SECTION("cancel: unmatched receives are cancelled; sends and matched receives are not");
  MPI_Request req;
  MPI_Status st;
  int flag = 0, v = 0;
  if (rank == 0) {
    CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "unmatched ANY_SOURCE receive was not cancelled");
    CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, 50, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "unmatched receive from rank 1 was not cancelled");
    CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, 52, MPI_COMM_WORLD, &req));
    int go = 0;
    CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 1, 53, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && v == 52, "a matched receive was cancelled (v=%d)", v);
    CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 51, MPI_COMM_WORLD, &st));
    CHECK(v == 51, "the send that was asked to cancel was not delivered");
  } else if (rank == 1) {
    int m = 52, g = 1, s = 51;
    CHECK_MPI(MPI_Send(&m, 1, MPI_INT, 0, 52, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(&g, 1, MPI_INT, 0, 53, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Isend(&s, 1, MPI_INT, 0, 51, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_MPI(MPI_Wait(&req, &st));
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a send reported cancelled");
  }
}

static void test_truncation(char* a, char* b) {
  SECTION("truncation: MPI_ERR_TRUNCATE returned to the program (MPI_ERRORS_RETURN)");
  MPI_Comm comm;
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  if (rank == 1) {
    int v[100];
    for (int i = 0; i < 100; ++i) v[i] = i;
    CHECK_MPI(MPI_Send(v, 100, MPI_INT, 0, 60, comm));
    fill(a, BIG, 6);
    CHECK_MPI(MPI_Send(a, BIG, MPI_CHAR, 0, 61, comm));
    CHECK_MPI(MPI_Send(v, 5, MPI_INT, 0, 62, comm));
  } else if (rank == 0) {
    int v[10], cls = 0, count = 0;
    MPI_Status st;
    int rc = MPI_Recv(v, 10, MPI_INT, 1, 60, comm, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Recv of 100 ints into 10 returned class %d", cls);
    CHECK(v[9] == 9, "truncated receive did not deliver what fits");
    MPI_Request req;
    MPI_Status sts[1];
    CHECK_MPI(MPI_Irecv(b, 1000, MPI_CHAR, 1, 61, comm, &req));
    rc = MPI_Waitall(1, &req, sts);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "waitall class %d", cls);
    MPI_Error_class(sts[0].MPI_ERROR, &cls);
    MPI_Get_count(&sts[0], MPI_CHAR, &count);
    CHECK(cls == MPI_ERR_TRUNCATE && count == 1000 && filled(b, 1000, 6),
          "truncated rendezvous: class %d count %d", cls, count);
    CHECK_MPI(MPI_Recv(v, 10, MPI_INT, 1, 62, comm, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 5 && v[4] == 4, "message after a truncation");
  }
  CHECK_MPI(MPI_Comm_free(&comm));
}

static void test_communicators(void) {
  SECTION("communicator ranks: reversed split, odd/even split, intercommunicator");
  MPI_Comm rev, half, inter;
  int r = -1, v = -1;
  MPI_Status st;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - rank, &rev));
  MPI_Comm_rank(rev, &r);
  CHECK(r == nprocs - 1 - rank, "reversed rank %d", r);
  if (r != 0) {
    CHECK_MPI(MPI_Send(&r, 1, MPI_INT, 0, 5, rev));
  } else {
    for (int i = 1; i < nprocs; ++i) {
      CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5, rev, &st));
      CHECK(st.MPI_SOURCE == v, "reversed comm: MPI_SOURCE %d for sender rank %d", st.MPI_SOURCE,
            v);
    }
  }
  int right = (r + 1) % nprocs, left = (r + nprocs - 1) % nprocs;
  CHECK_MPI(MPI_Sendrecv(&r, 1, MPI_INT, right, 6, &v, 1, MPI_INT, left, 6, rev, &st));
  CHECK(v == left && st.MPI_SOURCE == left, "ring on reversed comm: %d from %d", v, st.MPI_SOURCE);
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
  int hr = -1, hn = 0;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hn);
  CHECK_MPI(MPI_Sendrecv(&hr, 1, MPI_INT, (hr + 1) % hn, 7, &v, 1, MPI_INT, (hr + hn - 1) % hn, 7,
                         half, &st));
  CHECK(v == (hr + hn - 1) % hn && st.MPI_SOURCE == v, "ring on split comm");
  CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 8, &inter));
  int rn = 0;
  MPI_Comm_remote_size(inter, &rn);
  if (hr < rn) {
    CHECK_MPI(
        MPI_Sendrecv(&rank, 1, MPI_INT, hr, 9, &v, 1, MPI_INT, MPI_ANY_SOURCE, 9, inter, &st));
    CHECK(st.MPI_SOURCE == hr && v % 2 != rank % 2, "intercomm: source %d world %d", st.MPI_SOURCE,
          v);
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Comm_free(&rev);
}

static void test_modes(char* a, char* b) {
  SECTION("send modes: buffered, ready, persistent; zero-byte messages");
  int peer = rank ^ 1;
  if (peer >= nprocs) return;
  int bsize = BIG + 4096 + 2 * MPI_BSEND_OVERHEAD;
  char* attach = malloc((size_t)bsize);
  CHECK_MPI(MPI_Buffer_attach(attach, bsize));
  fill(a, BIG, 7);
  CHECK_MPI(MPI_Bsend(a, BIG, MPI_CHAR, peer, 70, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Bsend(&rank, 1, MPI_INT, peer, 71, MPI_COMM_WORLD));
  int v = -1;
  CHECK_MPI(MPI_Recv(b, BIG, MPI_CHAR, peer, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  CHECK(filled(b, BIG, 7) && v == peer, "bsend payloads");
  void* detached;
  CHECK_MPI(MPI_Buffer_detach(&detached, &bsize));
  free(attach);

  MPI_Request req;
  CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, peer, 72, MPI_COMM_WORLD, &req));
  CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_INT, peer, 73, NULL, 0, MPI_INT, peer, 73, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  CHECK_MPI(MPI_Rsend(&rank, 1, MPI_INT, peer, 72, MPI_COMM_WORLD));
  CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
  CHECK(v == peer, "rsend payload");

  MPI_Request p[2];
  int out = 0, in = -1;
  CHECK_MPI(MPI_Send_init(&out, 1, MPI_INT, peer, 74, MPI_COMM_WORLD, &p[0]));
  CHECK_MPI(MPI_Recv_init(&in, 1, MPI_INT, peer, 74, MPI_COMM_WORLD, &p[1]));
  for (int i = 0; i < 10; ++i) {
    out = 1000 * rank + i;
    CHECK_MPI(MPI_Startall(2, p));
    CHECK_MPI(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
    CHECK(in == 1000 * peer + i, "persistent round %d got %d", i, in);
  }
  MPI_Request_free(&p[0]);
  MPI_Request_free(&p[1]);

  MPI_Status st;
  int count = -1;
  CHECK_MPI(
      MPI_Sendrecv(NULL, 0, MPI_INT, peer, 75, b, 10, MPI_INT, peer, 75, MPI_COMM_WORLD, &st));
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == 0 && st.MPI_SOURCE == peer, "zero-byte message: count %d", count);
}

static void test_many(void) {
  SECTION("many requests in flight: 2000 small messages each way, pairwise");
  enum { N = 2000 };
  int peer = rank ^ 1;
  if (peer >= nprocs) return;
  int* out = malloc(N * sizeof *out);
  int* in = malloc(N * sizeof *in);
  MPI_Request* reqs = malloc(2 * N * sizeof *reqs);
  for (int i = 0; i < N; ++i) {
    out[i] = rank * N + i;
    in[i] = -1;
    CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, peer, i % 7, MPI_COMM_WORLD, &reqs[i]));
  }
  for (int i = 0; i < N; ++i)
    CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, peer, i % 7, MPI_COMM_WORLD, &reqs[N + i]));
  CHECK_MPI(MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE));
  for (int i = 0; i < N; ++i) CHECK(in[i] == peer * N + i, "message %d got %d", i, in[i]);
  free(out);
  free(in);
  free(reqs);
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  CHECK(nprocs >= 2, "needs at least 2 ranks, got %d", nprocs);
  char* a = malloc(8 * BIG);
  char* b = malloc(8 * BIG);
  CHECK(a && b, "out of memory");
  /* A barrier between sections keeps one section's messages out of the next one's
   * wildcard receives (and runs Open MPI's barrier, negative tags, through rdmx). */
  test_self(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_wildcards();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_order(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_ssend(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_probe(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_iprobe_progress();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_mprobe(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_cancel();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_truncation(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_communicators();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_modes(a, b);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_many();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_p2p: all checks passed on %d ranks\n", nprocs);
  free(a);
  free(b);
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
