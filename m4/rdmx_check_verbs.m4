# RDMX_CHECK_VERBS: rdma-core's libibverbs and librdmacm, for the native backend.
AC_DEFUN([RDMX_CHECK_VERBS], [
  RDMX_WITH_PKG([verbs], [libibverbs >= 1.8 librdmacm >= 1.2],
                [libibverbs-dev librdmacm-dev], [the native verbs/rdma_cm backend])
])
