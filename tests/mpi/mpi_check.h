/* Checks for the MPI test programs: a failed check prints where and why, then aborts
 * the whole job (a hang would only be caught by the driver's timeout). */
#ifndef RDMX_TESTS_MPI_CHECK_H
#define RDMX_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures = 0;

#define CHECK(cond, ...)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      int check_rank_ = -1;                                                                   \
      MPI_Comm_rank(MPI_COMM_WORLD, &check_rank_);                                            \
      fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed: ", check_rank_, __FILE__, __LINE__, \
              #cond);                                                                         \
      fprintf(stderr, __VA_ARGS__);                                                           \
      fprintf(stderr, "\n");                                                                  \
      fflush(stderr);                                                                         \
      ++check_failures;                                                                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                           \
    }                                                                                         \
  } while (0)

#define CHECK_MPI(call)                                                                     \
  do {                                                                                      \
    int check_rc_ = (call);                                                                 \
    if (check_rc_ != MPI_SUCCESS) {                                                         \
      char check_msg_[MPI_MAX_ERROR_STRING];                                                \
      int check_len_ = 0;                                                                   \
      MPI_Error_string(check_rc_, check_msg_, &check_len_);                                 \
      CHECK(check_rc_ == MPI_SUCCESS, "%s returned %d (%s)", #call, check_rc_, check_msg_); \
    }                                                                                       \
  } while (0)

/* One line per test section on rank 0, so a log shows how far a run got. */
#define SECTION(name)                               \
  do {                                              \
    int section_rank_ = -1;                         \
    MPI_Comm_rank(MPI_COMM_WORLD, &section_rank_);  \
    if (section_rank_ == 0) printf("  %s\n", name); \
    fflush(stdout);                                 \
  } while (0)

#endif
