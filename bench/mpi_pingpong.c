/* mpi_pingpong: an MPI latency and bandwidth table between ranks 0 and 1, for any PML
 * (run it through rdmx with --mca pml cm --mca mtl rdmx).
 *
 *   latency:   half the round trip of a blocking ping-pong
 *   bandwidth: a window of non-blocking sends, acknowledged by a zero-byte reply
 *   msg rate:  the same windows counted in messages (osu_mbw_mr with one pair)
 *
 * Each is the mean over the timed iterations (as OSU's benchmarks report), followed by
 * the median iteration or window (p50): on a shared machine the median of one run
 * moves far less than its mean.
 *
 * Sizes go up by --factor (4; 2 for the points of a plot) from --min-size (1), or are
 * the ones --sizes lists (8,1048576: a row each, without the sizes between, for a run
 * that has little time, such as across the Soft-RoCE VM's hosts).
 *
 * --latency-only leaves out the bandwidth and message-rate loops (bench/count-verbs).
 *
 * usage: mpi_pingpong [--min-size BYTES] [--max-size BYTES] [--factor F] [--iters N]
 *                     [--window N] [--sizes BYTES,BYTES...] [--latency-only] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SIZES = 32 };

typedef struct {
  size_t min_size;
  size_t max_size;
  int factor;
  int iters;
  int window;
  size_t sizes[MAX_SIZES]; /* --sizes, nsizes of them; none: min_size to max_size */
  int nsizes;
  int latency_only;
} options_t;

/* --sizes: a comma-separated list of sizes in bytes, each from 1 to 1 GiB. */
static int parse_sizes(const char* list, options_t* o) {
  o->nsizes = 0;
  while (*list) {
    char* end = NULL;
    unsigned long long v = strtoull(list, &end, 10);
    if (end == list || v < 1 || v > (1ull << 30) || o->nsizes == MAX_SIZES) return 0;
    o->sizes[o->nsizes++] = (size_t)v;
    if (*end && (*end != ',' || !end[1])) return 0; /* a comma, then more sizes */
    list = *end ? end + 1 : end;
  }
  return o->nsizes > 0;
}

static int parse(int argc, char** argv, options_t* o) {
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && 0 == strcmp(argv[i], "--max-size")) {
      o->max_size = strtoull(argv[++i], NULL, 0);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--min-size")) {
      o->min_size = strtoull(argv[++i], NULL, 0);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--factor")) {
      o->factor = atoi(argv[++i]);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--iters")) {
      o->iters = atoi(argv[++i]);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--window")) {
      o->window = atoi(argv[++i]);
    } else if (i + 1 < argc && 0 == strcmp(argv[i], "--sizes")) {
      if (!parse_sizes(argv[++i], o)) return 0;
    } else if (0 == strcmp(argv[i], "--latency-only")) {
      o->latency_only = 1;
    } else {
      return 0;
    }
  }
  /* The buffer holds the largest size listed. */
  for (int k = 0; k < o->nsizes; ++k)
    if (o->sizes[k] > o->max_size) o->max_size = o->sizes[k];
  return o->min_size >= 1 && o->min_size <= o->max_size && o->max_size <= ((size_t)1 << 30) &&
         o->factor >= 2 && o->factor <= 16 && o->iters >= 1 && o->window >= 1 && o->window <= 1024;
}

/* Fewer repetitions for large messages, so the table takes seconds, not minutes. */
static int reps_for(size_t size, int iters) {
  int reps = iters;
  while (reps > 10 && size * (size_t)reps > ((size_t)256 << 20)) reps /= 2;
  return reps;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The median of n samples (reordered). */
static double median(double* t, int n) {
  qsort(t, (size_t)n, sizeof *t, by_value);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Mean and median (*p50) of half the round trip, in microseconds; t holds reps samples.
 * Rank 0 times it; rank 1 only answers and reads no clock (in a VM whose clock has no
 * vDSO path every read is a system call, which bench/count-verbs would count). Never
 * inlined nor cloned: bench/count-verbs counts from its entry to its exit, by name. */
__attribute__((noinline, noclone)) static double latency_us(char* buf, size_t size, int reps,
                                                            int rank, double* t, double* p50) {
  const int warmup = 10;
  double start = 0, last = 0;
  for (int i = 0; i < warmup + reps; ++i) {
    if (i == warmup && rank == 0) start = last = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
    if (i >= warmup && rank == 0) {
      double now = MPI_Wtime();
      t[i - warmup] = now - last;
      last = now;
    }
  }
  if (rank != 0) return *p50 = 0;
  *p50 = median(t, reps) * 1e6 / 2.0;
  return (last - start) * 1e6 / (2.0 * reps);
}

/* Bandwidth over the whole run and at the median window (*p50), in MB/s; t holds at
 * least max(reps / window, 2) samples. */
static double bandwidth_mbs(char* buf, size_t size, int reps, int window, int rank,
                            MPI_Request* reqs, double* t, double* p50) {
  int rounds = reps / window > 2 ? reps / window : 2;
  double start = 0, last = 0;
  for (int r = 0; r < rounds + 1; ++r) {
    if (r == 1) start = last = MPI_Wtime(); /* round 0 warms up */
    for (int w = 0; w < window; ++w) {
      if (rank == 0)
        MPI_Isend(buf, (int)size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &reqs[w]);
      else
        MPI_Irecv(buf, (int)size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &reqs[w]);
    }
    MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
    if (rank == 0)
      MPI_Recv(NULL, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(NULL, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    if (r >= 1) {
      double now = MPI_Wtime();
      t[r - 1] = now - last;
      last = now;
    }
  }
  *p50 = (double)size * window / median(t, rounds) / 1e6;
  return (double)size * window * rounds / (last - start) / 1e6;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nprocs = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  options_t o = {1, (size_t)4 << 20, 4, 1000, 16, {0}, 0, 0};
  if (!parse(argc, argv, &o) || nprocs < 2) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpirun -np 2 mpi_pingpong [--min-size BYTES] [--max-size BYTES] "
              "[--factor F] [--iters N] [--window N] [--sizes BYTES,BYTES...] "
              "[--latency-only]\n");
    MPI_Finalize();
    return 2;
  }
  char* buf = malloc(o.max_size);
  MPI_Request* reqs = malloc((size_t)o.window * sizeof *reqs);
  double* samples = malloc((size_t)(o.iters + 2) * sizeof *samples);
  if (!buf || !reqs || !samples) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(buf, 1, o.max_size);
  if (rank == 0)
    printf("%12s %14s %16s %16s %14s %16s\n", "bytes", "latency (us)", "bandwidth (MB/s)",
           "msg rate (M/s)", "p50 lat (us)", "p50 bw (MB/s)");
  /* Without --sizes: from min_size to max_size by factor (at most 31 sizes up to 1 GiB). */
  if (!o.nsizes)
    for (size_t size = o.min_size; size <= o.max_size; size *= (size_t)o.factor)
      o.sizes[o.nsizes++] = size;
  for (int k = 0; k < o.nsizes; ++k) {
    size_t size = o.sizes[k];
    if (rank > 1) {
      MPI_Barrier(MPI_COMM_WORLD);
      continue;
    }
    int reps = reps_for(size, o.iters);
    double lat_p50 = 0, bw_p50 = 0;
    double lat = latency_us(buf, size, reps, rank, samples, &lat_p50);
    double bw =
        o.latency_only ? 0 : bandwidth_mbs(buf, size, reps, o.window, rank, reqs, samples, &bw_p50);
    if (rank == 0) {
      printf("%12zu %14.2f %16.2f %16.4f %14.2f %16.2f\n", size, lat, bw, bw / (double)size,
             lat_p50, bw_p50);
      fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  free(buf);
  free(reqs);
  free(samples);
  MPI_Finalize();
  return 0;
}
