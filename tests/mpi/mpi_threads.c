/* MPI_THREAD_MULTIPLE through the MTL (2 ranks): several threads per rank send and
 * receive at the same time (blocking and non-blocking, eager and rendezvous sizes,
 * one thread on ANY_SOURCE/ANY_TAG), then a collective from every thread on its own
 * communicator. Every payload is checked. */
#include <pthread.h>
#include <string.h>

#include "mpi_check.h"

enum { THREADS = 4, ROUNDS = 300 };

static int rank, peer;
static MPI_Comm comms[THREADS];

static void* worker(void* arg) {
  int t = (int)(long)arg;
  size_t big = 65536 + 64 * (size_t)t;
  char* out = malloc(big);
  char* in = malloc(big);
  for (int i = 0; i < ROUNDS; ++i) {
    size_t len = (i % 10 == 9) ? big : (size_t)(4 + i % 64);
    for (size_t j = 0; j < len; ++j) out[j] = (char)(t * 13 + i + (int)j + rank);
    MPI_Request reqs[2];
    MPI_Status st;
    int src = t == THREADS - 1 ? MPI_ANY_SOURCE : peer;
    int tag = t == THREADS - 1 ? MPI_ANY_TAG : t;
    /* The wildcard thread owns tag THREADS - 1 on its own communicator. */
    CHECK_MPI(MPI_Irecv(in, (int)big, MPI_CHAR, src, tag, comms[t], &reqs[0]));
    if (i % 2)
      CHECK_MPI(MPI_Isend(out, (int)len, MPI_CHAR, peer, t, comms[t], &reqs[1]));
    else
      CHECK_MPI(MPI_Issend(out, (int)len, MPI_CHAR, peer, t, comms[t], &reqs[1]));
    CHECK_MPI(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&reqs[0], &st));
    int count = 0;
    MPI_Get_count(&st, MPI_CHAR, &count);
    CHECK((size_t)count == len && st.MPI_SOURCE == peer && st.MPI_TAG == t,
          "thread %d round %d: count %d source %d tag %d", t, i, count, st.MPI_SOURCE, st.MPI_TAG);
    for (size_t j = 0; j < len; ++j)
      CHECK(in[j] == (char)(t * 13 + i + (int)j + peer), "thread %d round %d byte %zu", t, i, j);
  }
  /* Blocking calls from every thread at once, world communicator, distinct tags. */
  for (int i = 0; i < ROUNDS; ++i) {
    int v = rank * 100000 + t * 1000 + i, w = -1;
    CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, peer, 100 + t, &w, 1, MPI_INT, peer, 100 + t,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(w == peer * 100000 + t * 1000 + i, "thread %d sendrecv %d got %d", t, i, w);
  }
  long mine = t + rank, sum = 0;
  CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comms[t]));
  CHECK(sum == 2 * t + 1, "thread %d allreduce %ld", t, sum);
  free(out);
  free(in);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = 0, nprocs = 0;
  CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  CHECK(nprocs == 2, "runs on exactly 2 ranks, got %d", nprocs);
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided thread level %d", provided);
  peer = 1 - rank;
  for (int t = 0; t < THREADS; ++t) CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
  SECTION("4 threads per rank: isend/issend/irecv, sendrecv, allreduce at once");
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, worker, (void*)(long)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; ++t) MPI_Comm_free(&comms[t]);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_threads: all checks passed (%d threads per rank)\n", THREADS);
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
