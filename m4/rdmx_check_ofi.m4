# RDMX_CHECK_OFI: libfabric >= 1.17, for the libfabric backend (tcp and verbs providers).
AC_DEFUN([RDMX_CHECK_OFI], [
  RDMX_WITH_PKG([ofi], [libfabric >= 1.17], [libfabric-dev], [the libfabric backend])
])
