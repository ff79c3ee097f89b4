# RDMX_CHECK_HWLOC: hwloc >= 2.5, to pick the device nearest to the calling core.
AC_DEFUN([RDMX_CHECK_HWLOC], [
  RDMX_WITH_PKG([hwloc], [hwloc >= 2.5], [libhwloc-dev], [topology-aware device selection])
])
