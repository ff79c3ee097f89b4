/* Collectives through the MTL (any number of ranks): Open MPI's coll components send with
 * negative tags, which rdmx must match exactly and keep away from MPI_ANY_TAG. Every
 * result is checked: barrier, bcast, reduce, allreduce, gather, allgather, alltoall,
 * alltoallv, scan, non-blocking collectives, and the same on a split communicator. */
#include <string.h>

#include "mpi_check.h"

static int rank, nprocs;

static void test_barrier_bcast(MPI_Comm comm, int r, int n) {
  SECTION("barrier, bcast (4 bytes to 8 MiB, every root)");
  for (int i = 0; i < 5; ++i) CHECK_MPI(MPI_Barrier(comm));
  const int counts[4] = {1, 1000, 100000, 2 << 20};
  int* buf = malloc((size_t)(2 << 20) * sizeof(int));
  for (int k = 0; k < 4; ++k) {
    for (int root = 0; root < n; ++root) {
      for (int i = 0; i < counts[k]; ++i) buf[i] = r == root ? root * 7 + i : -1;
      CHECK_MPI(MPI_Bcast(buf, counts[k], MPI_INT, root, comm));
      CHECK(buf[0] == root * 7 && buf[counts[k] - 1] == root * 7 + counts[k] - 1,
            "bcast of %d ints from %d", counts[k], root);
    }
  }
  free(buf);
}

static void test_reductions(MPI_Comm comm, int r, int n) {
  SECTION("reduce, allreduce (sum, max, 1M doubles), scan");
  long sum = 0, expect = (long)n * (n - 1) / 2;
  long mine = r;
  CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
  CHECK(sum == expect, "allreduce sum %ld, expected %ld", sum, expect);
  double dmax = 0, dmine = r * 1.5;
  CHECK_MPI(MPI_Allreduce(&dmine, &dmax, 1, MPI_DOUBLE, MPI_MAX, comm));
  CHECK(dmax == (n - 1) * 1.5, "allreduce max %f", dmax);
  const int N = 1 << 20;
  double* in = malloc((size_t)N * sizeof(double));
  double* out = malloc((size_t)N * sizeof(double));
  for (int i = 0; i < N; ++i) in[i] = r + i;
  CHECK_MPI(MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_SUM, comm));
  for (int i = 0; i < N; i += 4099)
    CHECK(out[i] == (double)expect + (double)n * i, "allreduce element %d = %f", i, out[i]);
  CHECK_MPI(MPI_Reduce(in, out, N, MPI_DOUBLE, MPI_SUM, n - 1, comm));
  if (r == n - 1) CHECK(out[N - 1] == (double)expect + (double)n * (N - 1), "reduce at root");
  long pre = 0;
  CHECK_MPI(MPI_Scan(&mine, &pre, 1, MPI_LONG, MPI_SUM, comm));
  CHECK(pre == (long)r * (r + 1) / 2, "scan %ld", pre);
  free(in);
  free(out);
}

static void test_gathers(MPI_Comm comm, int r, int n) {
  SECTION("gather, allgather, alltoall, alltoallv");
  int* all = malloc((size_t)n * 1024 * sizeof(int));
  int* mine = malloc(1024 * sizeof(int));
  for (int i = 0; i < 1024; ++i) mine[i] = r * 10000 + i;
  CHECK_MPI(MPI_Gather(mine, 1024, MPI_INT, all, 1024, MPI_INT, 0, comm));
  if (r == 0)
    for (int p = 0; p < n; ++p) CHECK(all[p * 1024 + 5] == p * 10000 + 5, "gather from %d", p);
  CHECK_MPI(MPI_Allgather(mine, 1024, MPI_INT, all, 1024, MPI_INT, comm));
  for (int p = 0; p < n; ++p) CHECK(all[p * 1024 + 1023] == p * 10000 + 1023, "allgather %d", p);

  const int B = 4096; /* ints per peer: 16 KiB blocks, above the eager limit */
  int* sb = malloc((size_t)n * B * sizeof(int));
  int* rb = malloc((size_t)n * B * sizeof(int));
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < B; ++i) sb[p * B + i] = r * 1000000 + p * 1000 + (i % 1000);
  CHECK_MPI(MPI_Alltoall(sb, B, MPI_INT, rb, B, MPI_INT, comm));
  for (int p = 0; p < n; ++p)
    CHECK(rb[p * B] == p * 1000000 + r * 1000 && rb[p * B + B - 1] == p * 1000000 + r * 1000 + 95,
          "alltoall block from %d", p);

  int* sc = malloc((size_t)n * sizeof(int));
  int* sd = malloc((size_t)n * sizeof(int));
  int* rc = malloc((size_t)n * sizeof(int));
  int* rd = malloc((size_t)n * sizeof(int));
  for (int p = 0; p < n; ++p) {
    sc[p] = p + 1; /* rank r sends p+1 ints to p, so receives r+1 from everyone */
    sd[p] = p * B;
    rc[p] = r + 1;
    rd[p] = p * B;
  }
  for (int p = 0; p < n; ++p)
    for (int i = 0; i < sc[p]; ++i) sb[sd[p] + i] = r * 100 + i;
  CHECK_MPI(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm));
  for (int p = 0; p < n; ++p) CHECK(rb[rd[p] + r] == p * 100 + r, "alltoallv from %d", p);
  free(all);
  free(mine);
  free(sb);
  free(rb);
  free(sc);
  free(sd);
  free(rc);
  free(rd);
}

static void test_nonblocking(MPI_Comm comm, int r, int n) {
  SECTION("non-blocking collectives (ibarrier, ibcast, iallreduce) overlapped with p2p");
  MPI_Request reqs[5];
  long mine = r + 1, sum = 0;
  int data[256];
  for (int i = 0; i < 256; ++i) data[i] = r == 0 ? i * 3 : 0;
  CHECK_MPI(MPI_Ibarrier(comm, &reqs[0]));
  CHECK_MPI(MPI_Ibcast(data, 256, MPI_INT, 0, comm, &reqs[1]));
  CHECK_MPI(MPI_Iallreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm, &reqs[2]));
  int out = r, in = -1;
  CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, (r + n - 1) % n, MPI_ANY_TAG, comm, &reqs[3]));
  CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, (r + 1) % n, 0, comm, &reqs[4]));
  CHECK_MPI(MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE));
  CHECK(sum == (long)n * (n + 1) / 2, "iallreduce %ld", sum);
  CHECK(data[255] == 765, "ibcast");
  CHECK(in == (r + n - 1) % n, "ANY_TAG receive beside collectives got %d", in);
}

static void run_all(MPI_Comm comm) {
  int r = 0, n = 0;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  test_barrier_bcast(comm, r, n);
  test_reductions(comm, r, n);
  test_gathers(comm, r, n);
  test_nonblocking(comm, r, n);
}

int main(int argc, char** argv) {
  CHECK_MPI(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  SECTION("on MPI_COMM_WORLD");
  run_all(MPI_COMM_WORLD);
  MPI_Comm rev;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - rank, &rev));
  SECTION("on a reversed-rank communicator");
  run_all(rev);
  MPI_Comm_free(&rev);
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_collectives: all checks passed on %d ranks\n", nprocs);
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
