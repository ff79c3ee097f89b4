# RDMX_CHECK_PMIX: PMIx, to bootstrap ranks started by mpirun/prterun/srun without MPI.
AC_DEFUN([RDMX_CHECK_PMIX], [
  RDMX_WITH_PKG([pmix], [pmix >= 3], [libpmix-dev], [the PMIx bootstrap])
])
