/* A rank told to sleep when idle (mtl_rdmx_idle=sleep) must not spin while it waits for
 * a late message: rank 1 waits in MPI_Recv (and then in MPI_Wait) for messages rank 0
 * sends 400 ms late, and may spend at most a third of that time on the processor. */
#include <time.h>
#include <unistd.h>

#include "mpi_check.h"

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char** argv) {
  int rank, nprocs;
  CHECK_MPI(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  CHECK(nprocs == 2, "runs on exactly 2 ranks, got %d", nprocs);
  SECTION("a rank waiting for a late message sleeps (mtl_rdmx_idle=sleep)");
  int v = 0;
  CHECK_MPI(MPI_Sendrecv_replace(&v, 1, MPI_INT, 1 - rank, 0, 1 - rank, 0, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE)); /* connected */
  for (int round = 0; round < 2; ++round) {
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
      usleep(400000);
      v = 100 + round;
      CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
    } else {
      double w0 = MPI_Wtime(), c0 = thread_cpu();
      if (round == 0) {
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else {
        MPI_Request req;
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
      }
      double wall = MPI_Wtime() - w0, cpu = thread_cpu() - c0;
      printf("  %s: waited %.3f s, %.3f s of it on the processor\n",
             round ? "MPI_Wait" : "MPI_Recv", wall, cpu);
      CHECK(v == 100 + round, "received %d", v);
      CHECK(wall > 0.2, "the message arrived before it was sent (%.3f s)", wall);
      CHECK(cpu < wall / 3, "the waiting rank spun: %.3f s on the processor in %.3f s", cpu, wall);
    }
  }
  CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0) printf("mpi_idle: all checks passed\n");
  CHECK_MPI(MPI_Finalize());
  return check_failures ? 1 : 0;
}
