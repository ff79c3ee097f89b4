# RDMX_CHECK_GTEST: GoogleTest (and Google Benchmark for bench/, optional on its own).
AC_DEFUN([RDMX_CHECK_GTEST], [
  RDMX_WITH_PKG([gtest], [gtest >= 1.10], [libgtest-dev], [the GoogleTest test suites])
  RDMX_WITH_PKG([gbench], [benchmark >= 1.5], [libbenchmark-dev], [the Google Benchmark programs])
])
