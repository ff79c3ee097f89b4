# RDMX_CHECK_HWLOC: hwloc >= 2.5, to pick the RDMA device nearest to the calling thread's
# CPUs (src/topology/). Without it the verbs backend takes the first device.
AC_DEFUN([RDMX_CHECK_HWLOC], [
  RDMX_WITH_PKG([hwloc], [hwloc >= 2.5], [libhwloc-dev], [topology-aware device selection])
])
