/* Corners of the MPI standard that third-party suites (MPICH's test suite, mpi4py's)
 * check and ob1 gets right, 2 ranks:
 * - single-completion calls and probes leave status.MPI_ERROR as the caller set it;
 * - MPI_BOTTOM with absolute-address datatypes, through persistent and plain requests,
 *   contiguous and not;
 * - an error found while starting a request completes that request with the error
 *   (no hang), and the connection stays usable;
 * - a rendezvous-sized message when the two ranks were given different eager limits
 *   (run-mpi-tests gives rank 1 a smaller one). */
#include <stdint.h>
#include <string.h>

#include "mpi_check.h"

#define SENTINEL MPI_ERR_DIMS /* any value a correct call leaves in place */

static int rank, peer;

static void check_untouched(const MPI_Status* st, const char* call) {
  CHECK(st->MPI_ERROR == SENTINEL, "%s changed status.MPI_ERROR from %d to %d", call, SENTINEL,
        st->MPI_ERROR);
}

static void test_status_error_untouched(void) {
  SECTION("probe, mprobe, recv, wait and test leave status.MPI_ERROR alone");
  int v = 7, got = 0, flag = 0;
  MPI_Status st;
  MPI_Request req;
  MPI_Message msg;
  if (rank == 1) {
    for (int t = 0; t < 6; ++t) CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, 100 + t, MPI_COMM_WORLD));
    return;
  }
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Probe(peer, 100, MPI_COMM_WORLD, &st));
  check_untouched(&st, "MPI_Probe");
  do {
    st.MPI_ERROR = SENTINEL;
    CHECK_MPI(MPI_Iprobe(peer, 100, MPI_COMM_WORLD, &flag, &st));
  } while (!flag);
  check_untouched(&st, "MPI_Iprobe");
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, peer, 100, MPI_COMM_WORLD, &st));
  check_untouched(&st, "MPI_Recv");
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Mprobe(peer, 101, MPI_COMM_WORLD, &msg, &st));
  check_untouched(&st, "MPI_Mprobe");
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Mrecv(&got, 1, MPI_INT, &msg, &st));
  check_untouched(&st, "MPI_Mrecv");
  do {
    st.MPI_ERROR = SENTINEL;
    CHECK_MPI(MPI_Improbe(peer, 102, MPI_COMM_WORLD, &flag, &msg, &st));
  } while (!flag);
  check_untouched(&st, "MPI_Improbe");
  CHECK_MPI(MPI_Imrecv(&got, 1, MPI_INT, &msg, &req));
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Wait(&req, &st));
  check_untouched(&st, "MPI_Wait");
  CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, peer, 103, MPI_COMM_WORLD, &req));
  do {
    st.MPI_ERROR = SENTINEL;
    CHECK_MPI(MPI_Test(&req, &flag, &st));
  } while (!flag);
  check_untouched(&st, "MPI_Test");
  st.MPI_ERROR = SENTINEL;
  CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, rank, 9, &got, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &st));
  check_untouched(&st, "MPI_Sendrecv");
  for (int t = 4; t < 6; ++t)
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, peer, 100 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

/* A struct type of `blocks` blocks of `n` ints at the absolute addresses of a[0] and
 * a[2n] (one block: contiguous memory, two blocks: not). */
static MPI_Datatype absolute_type(int* a, int n, int blocks) {
  int lens[2] = {n, n};
  MPI_Aint disp[2];
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Get_address(&a[0], &disp[0]);
  MPI_Get_address(&a[2 * n], &disp[1]);
  MPI_Datatype t;
  CHECK_MPI(MPI_Type_create_struct(blocks, lens, disp, types, &t));
  CHECK_MPI(MPI_Type_commit(&t));
  return t;
}

static void fill_ints(int* a, int n, int seed) {
  for (int i = 0; i < n; ++i) a[i] = seed * 100003 + i;
}

static int count_matches(const int* a, int from, int n, int seed, int at) {
  for (int i = 0; i < n; ++i)
    if (a[from + i] != seed * 100003 + at + i) return 0;
  return 1;
}

/* Rank 0 sends from MPI_BOTTOM, rank 1 receives into MPI_BOTTOM, both persistent and
 * plain, n ints per block (eager and rendezvous sizes). */
static void bottom_round(int n, int blocks, int persistent) {
  int total = 3 * n;
  int* a = calloc((size_t)total, sizeof *a);
  CHECK(a, "out of memory");
  MPI_Datatype t = absolute_type(a, n, blocks);
  int seed = n + blocks * 7 + persistent * 13;
  if (rank == 0) fill_ints(a, total, seed);
  MPI_Request req;
  for (int round = 0; round < 2; ++round) {
    if (rank == 1) memset(a, 0, (size_t)total * sizeof *a);
    if (persistent || round == 0) {
      if (rank == 0)
        CHECK_MPI(persistent ? MPI_Send_init(MPI_BOTTOM, 1, t, peer, 200, MPI_COMM_WORLD, &req)
                             : MPI_Isend(MPI_BOTTOM, 1, t, peer, 200, MPI_COMM_WORLD, &req));
      else
        CHECK_MPI(persistent ? MPI_Recv_init(MPI_BOTTOM, 1, t, peer, 200, MPI_COMM_WORLD, &req)
                             : MPI_Irecv(MPI_BOTTOM, 1, t, peer, 200, MPI_COMM_WORLD, &req));
    } else {
      break;
    }
    if (persistent) CHECK_MPI(MPI_Startall(1, &req));
    MPI_Status st;
    CHECK_MPI(MPI_Waitall(1, &req, &st));
    if (rank == 1) {
      int count = 0;
      MPI_Get_count(&st, MPI_INT, &count);
      CHECK(count == blocks * n, "MPI_BOTTOM receive of %d ints got %d", blocks * n, count);
      CHECK(count_matches(a, 0, n, seed, 0), "MPI_BOTTOM block 0 (n=%d blocks=%d persistent=%d)", n,
            blocks, persistent);
      if (blocks == 2)
        CHECK(count_matches(a, 2 * n, n, seed, 2 * n), "MPI_BOTTOM block 1 (n=%d persistent=%d)", n,
              persistent);
    }
    if (persistent && round == 1) CHECK_MPI(MPI_Request_free(&req));
  }
  MPI_Type_free(&t);
  free(a);
}

static void test_bottom(void) {
  SECTION("MPI_BOTTOM with absolute addresses: persistent and plain, contiguous and not");
  const int sizes[] = {1, 1000, 100000}; /* 4 B, 4 KB, 400 KB per block */
  for (int s = 0; s < 3; ++s)
    for (int blocks = 1; blocks <= 2; ++blocks)
      for (int persistent = 0; persistent <= 1; ++persistent)
        bottom_round(sizes[s], blocks, persistent);
}

/* A send or receive rdmx refuses at start completes with an error instead of hanging,
 * and what follows on the connection still works. The trigger is an erroneous program
 * that MPI's argument checks let through: a buffer of 64 with a datatype whose data
 * starts 64 bytes below it, at address 0 (ob1 would read address 0 and crash). */
static void test_start_error_completes(void) {
  SECTION("an error found while starting a request completes it with the error");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int len = 1;
  MPI_Aint disp = -64;
  MPI_Datatype below, types[1] = {MPI_INT};
  CHECK_MPI(MPI_Type_create_struct(1, &len, &disp, types, &below));
  CHECK_MPI(MPI_Type_commit(&below));
  void* base = (void*)(uintptr_t)64;
  for (int persistent = 0; persistent <= 1; ++persistent) {
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    if (persistent) {
      CHECK_MPI(rank == 0 ? MPI_Send_init(base, 1, below, peer, 300, MPI_COMM_WORLD, &req)
                          : MPI_Recv_init(base, 1, below, peer, 300, MPI_COMM_WORLD, &req));
      rc = MPI_Start(&req);
    } else {
      rc = rank == 0 ? MPI_Isend(base, 1, below, peer, 300, MPI_COMM_WORLD, &req)
                     : MPI_Irecv(base, 1, below, peer, 300, MPI_COMM_WORLD, &req);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "a %s %s of data at address 0 succeeded",
          persistent ? "persistent" : "plain", rank == 0 ? "send" : "receive");
    /* Open MPI frees a request whose error it reported, persistent or not. */
    if (req != MPI_REQUEST_NULL) CHECK_MPI(MPI_Request_free(&req));
  }
  MPI_Type_free(&below);
  int v = 11, got = 0;
  CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, peer, 301, &got, 1, MPI_INT, peer, 301, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE));
  CHECK(got == 11, "the connection after a refused request delivered %d", got);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* Every size around both ranks' eager limits, both ways (run-mpi-tests sets them apart),
 * and around libfabric tcp's own (128 KiB). */
static void test_mixed_eager_limits(void) {
  SECTION("messages around both ranks' eager limits, both directions");
  const int sizes[] = {0,     1,     4096,  8191,   8192,   8193,   16384, 32768,
                       65535, 65536, 65537, 131071, 131072, 131073, 200000};
  char* out = malloc(200000);
  char* in = malloc(200000);
  CHECK(out && in, "out of memory");
  for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); ++s) {
    int n = sizes[s];
    for (int i = 0; i < n; ++i) out[i] = (char)(rank * 17 + i * 3 + s);
    MPI_Request r[2];
    CHECK_MPI(MPI_Irecv(in, n, MPI_CHAR, peer, 400 + s, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Isend(out, n, MPI_CHAR, peer, 400 + s, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < n; ++i)
      CHECK(in[i] == (char)(peer * 17 + i * 3 + s), "%d-byte message from rank %d: byte %d", n,
            peer, i);
  }
  free(out);
  free(in);
}

int main(int argc, char** argv) {
  int nprocs;
  CHECK_MPI(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  CHECK(nprocs == 2, "runs on exactly 2 ranks, got %d", nprocs);
  peer = 1 - rank;
  int only_portable = argc > 1 && strcmp(argv[1], "--portable") == 0;
  test_status_error_untouched();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_bottom();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  test_mixed_eager_limits();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  /* Not for other transports: ob1 reads the null address and crashes, as it may. */
  if (!only_portable) test_start_error_completes();
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_conformance: all checks passed\n");
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
