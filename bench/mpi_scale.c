/* mpi_scale: what a rank costs as the job grows (any PML). Every rank times MPI_Init
 * (wall and CPU), a first alltoall of 8 B and one of 16 KiB (through a transport that
 * connects on demand, these open every pair's connection), then ten more of each; it then
 * reads its own memory and file descriptors while every connection is still open. Rank 0
 * prints one line of key=value pairs that bench/scale reads:
 *
 *   scale: ranks=N large=B init_s=... init_cpu_s=... first8_s=... first_large_s=...
 *          later8_s=... later_large_s=... pss_mb=... pss_max_mb=... hwm_mb=... fds=...
 *          sockets=... memfds=...
 *
 * Times are the slowest rank's (a collective is as slow as its last rank); init_cpu_s is
 * the largest CPU time any rank spent inside MPI_Init; memory and descriptors are the
 * mean over ranks (pss_max_mb the largest). PSS splits each shared page among the
 * processes that map it, so the sum over ranks is what the job holds.
 *
 * usage: mpi_scale [--later N] [--large BYTES]   (default: 10 later alltoalls of 16384) */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The value in kB of the first line of a /proc file that starts with key, or -1. */
static double proc_kb(const char* path, const char* key) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  double kb = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (0 == strncmp(line, key, n)) {
      kb = strtod(line + n, NULL);
      break;
    }
  }
  fclose(f);
  return kb;
}

/* Open descriptors, and how many are sockets and memfds. */
static void count_fds(double* fds, double* sockets, double* memfds) {
  *fds = *sockets = *memfds = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[300], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) continue;
    target[n] = 0;
    *fds += 1;
    if (0 == strncmp(target, "socket:", 7)) *sockets += 1;
    if (0 == strncmp(target, "/memfd:", 7)) *memfds += 1;
  }
  closedir(d);
  *fds -= 1; /* the directory itself */
}

static double timed_alltoall(char* out, char* in, int bytes, int times) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = now();
  for (int i = 0; i < times; ++i)
    MPI_Alltoall(out, bytes, MPI_CHAR, in, bytes, MPI_CHAR, MPI_COMM_WORLD);
  return now() - start;
}

int main(int argc, char** argv) {
  int later = 10;
  long large = 16384;
  int bad = 0;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && 0 == strcmp(argv[i], "--later"))
      later = atoi(argv[++i]);
    else if (i + 1 < argc && 0 == strcmp(argv[i], "--large"))
      large = atol(argv[++i]);
    else
      bad = 1;
  }
  double cpu0 = cpu_seconds(), t0 = now();
  MPI_Init(&argc, &argv);
  double init_s = now() - t0, init_cpu_s = cpu_seconds() - cpu0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (bad || later < 1 || large < 8 || large > (1 << 24)) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_scale [--later N>=1] [--large BYTES from 8 to 16777216]\n");
    MPI_Finalize();
    return 2;
  }
  size_t total = (size_t)size * (size_t)large;
  char* out = malloc(total);
  char* in = malloc(total);
  if (!out || !in) {
    fprintf(stderr, "mpi_scale: rank %d: no memory for two buffers of %zu bytes\n", rank, total);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(out, rank & 0xff, total);
  memset(in, 0, total);

  double t[4];
  t[0] = timed_alltoall(out, in, 8, 1);
  t[1] = timed_alltoall(out, in, (int)large, 1);
  /* Every block of 'in' came from its own rank: the alltoall really moved the data. */
  int wrong = 0;
  for (int r = 0; r < size; ++r)
    if ((unsigned char)in[(size_t)r * (size_t)large + (size_t)large - 1] !=
        (unsigned char)(r & 0xff))
      wrong = 1;
  t[2] = timed_alltoall(out, in, 8, later);
  t[3] = timed_alltoall(out, in, (int)large, later);

  double mine[7], fds, sockets, memfds;
  count_fds(&fds, &sockets, &memfds);
  mine[0] = proc_kb("/proc/self/smaps_rollup", "Pss:") / 1024.0;
  mine[1] = proc_kb("/proc/self/status", "VmHWM:") / 1024.0;
  mine[2] = fds;
  mine[3] = sockets;
  mine[4] = memfds;
  mine[5] = wrong;
  mine[6] = mine[0];
  double sum[7], slowest[4], init_max[2], mine_init[2] = {init_s, init_cpu_s}, pss_max;
  MPI_Reduce(mine, sum, 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&mine[0], &pss_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(t, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(mine_init, init_max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (sum[5] > 0)
      fprintf(stderr, "mpi_scale: %.0f ranks received a block from the wrong rank\n", sum[5]);
    printf(
        "scale: ranks=%d large=%ld init_s=%.4f init_cpu_s=%.4f first8_s=%.4f first_large_s=%.4f "
        "later8_s=%.4f later_large_s=%.4f pss_mb=%.2f pss_max_mb=%.2f hwm_mb=%.2f fds=%.1f "
        "sockets=%.1f memfds=%.1f\n",
        size, large, init_max[0], init_max[1], slowest[0], slowest[1], slowest[2], slowest[3],
        sum[0] / size, pss_max, sum[1] / size, sum[2] / size, sum[3] / size, sum[4] / size);
    fflush(stdout);
  }
  free(out);
  free(in);
  int failed = rank == 0 && sum[5] > 0;
  MPI_Finalize();
  return failed ? 1 : 0;
}
