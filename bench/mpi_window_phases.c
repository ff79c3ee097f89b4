/* mpi_window_phases: where a window of non-blocking messages spends its time, on each
 * side (any PML). Rank 0 sends windows of small messages to rank 1, which acknowledges
 * each window with an empty message, as mpi_pingpong's message-rate column does. Each
 * rank times three phases of every window: posting the window (MPI_Isend or MPI_Irecv),
 * waiting for it (MPI_Waitall), and the acknowledgement (MPI_Recv or MPI_Send); it
 * prints the median of each in microseconds. The side that waits longest for the other
 * is not the one that limits the rate.
 *
 * usage: mpirun -np 2 mpi_window_phases [--size BYTES] [--window N] [--iters N]
 *        (default: 8 bytes, windows of 64, 20000 messages) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char** argv) {
  int size = 8, window = 64, iters = 20000;
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (0 == strcmp(argv[i], "--size"))
      size = v;
    else if (0 == strcmp(argv[i], "--window"))
      window = v;
    else if (0 == strcmp(argv[i], "--iters"))
      iters = v;
  }
  int rounds = iters / (window > 0 ? window : 1);
  if (2 != ranks || size < 0 || size > (1 << 20) || window < 1 || window > 1024 || rounds < 2) {
    if (0 == rank)
      fprintf(stderr,
              "usage: mpirun -np 2 mpi_window_phases [--size 0..1048576] "
              "[--window 1..1024] [--iters N, at least two windows]\n");
    MPI_Finalize();
    return 1;
  }
  char* buf = calloc((size_t)size + 1, 1);
  MPI_Request* reqs = malloc((size_t)window * sizeof *reqs);
  double* t = malloc((size_t)rounds * 3 * sizeof *t);
  double *post = t, *wait = t + rounds, *ack = t + 2 * rounds;
  for (int r = -2; r < rounds; ++r) { /* two windows warm up */
    double t0 = MPI_Wtime();
    for (int w = 0; w < window; ++w) {
      if (0 == rank)
        MPI_Isend(buf, size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &reqs[w]);
      else
        MPI_Irecv(buf, size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &reqs[w]);
    }
    double t1 = MPI_Wtime();
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    double t2 = MPI_Wtime();
    if (0 == rank)
      MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(NULL, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    double t3 = MPI_Wtime();
    if (r >= 0) {
      post[r] = (t1 - t0) * 1e6;
      wait[r] = (t2 - t1) * 1e6;
      ack[r] = (t3 - t2) * 1e6;
    }
  }
  double mine[3] = {median(post, rounds), median(wait, rounds), median(ack, rounds)};
  double theirs[3];
  MPI_Sendrecv(mine, 3, MPI_DOUBLE, 1 - rank, 4, theirs, 3, MPI_DOUBLE, 1 - rank, 4, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  if (0 == rank) {
    printf("%d-byte messages, windows of %d, %d windows; medians in us\n", size, window, rounds);
    printf("%-9s %10s %10s %10s\n", "rank", "post", "complete", "ack");
    printf("%-9s %10.3f %10.3f %10.3f\n", "sender", mine[0], mine[1], mine[2]);
    printf("%-9s %10.3f %10.3f %10.3f\n", "receiver", theirs[0], theirs[1], theirs[2]);
  }
  free(t);
  free(reqs);
  free(buf);
  MPI_Finalize();
  return 0;
}
