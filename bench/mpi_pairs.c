/* mpi_pairs: every rank ping-pongs with a partner (rank ^ 1) at once, a fixed number of
 * round trips of a small and of a mid-size message, and rank 0 prints the slowest pair's
 * time. With more ranks than cores, or beside busy processes, it measures how well a
 * transport's waiting ranks leave the CPU to the ranks that have work (any PML).
 *
 * usage: mpi_pairs [--iters N] [--sizes A,B,...]   (default: 2000 round trips of 8 and 65536) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_sizes(const char* text, size_t* sizes, int max) {
  int n = 0;
  const char* p = text;
  while (*p && n < max) {
    char* end = NULL;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || v > (1ull << 30)) return 0;
    sizes[n++] = (size_t)v;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return 0;
  }
  return n;
}

int main(int argc, char** argv) {
  int iters = 2000;
  size_t sizes[8] = {8, 65536};
  int nsizes = 2;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && 0 == strcmp(argv[i], "--iters")) {
      iters = atoi(argv[++i]);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--sizes")) {
      nsizes = parse_sizes(argv[++i], sizes, 8);
    } else {
      nsizes = 0;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (iters < 1 || nsizes < 1 || nprocs % 2) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpi_pairs [--iters N] [--sizes A,B,...] on an even number of ranks\n");
    MPI_Finalize();
    return 2;
  }
  size_t max = 0;
  for (int s = 0; s < nsizes; ++s) max = sizes[s] > max ? sizes[s] : max;
  char* buf = calloc(max ? max : 1, 1);
  int partner = rank ^ 1;
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    for (int s = 0; s < nsizes; ++s) {
      int n = (int)sizes[s];
      if (rank & 1) {
        MPI_Recv(buf, n, MPI_CHAR, partner, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, n, MPI_CHAR, partner, s, MPI_COMM_WORLD);
      } else {
        MPI_Send(buf, n, MPI_CHAR, partner, s, MPI_COMM_WORLD);
        MPI_Recv(buf, n, MPI_CHAR, partner, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
  }
  double mine = MPI_Wtime() - start, slowest = 0;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("pairs %d iters %d seconds %.4f\n", nprocs / 2, iters, slowest);
  free(buf);
  MPI_Finalize();
  return 0;
}
