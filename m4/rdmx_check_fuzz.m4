# RDMX_CHECK_FUZZ: --enable-fuzz, the libFuzzer targets of tests/fuzz/ (make fuzz).
# libFuzzer comes with clang, not g++, so such a tree is configured apart from the main
# one: ../configure --enable-fuzz CC=clang CXX=clang++ (scripts/fuzz does it in
# build-fuzz/). The whole library is then instrumented for coverage and built with
# AddressSanitizer and UndefinedBehaviorSanitizer; the targets link libFuzzer's main.
AC_DEFUN([RDMX_CHECK_FUZZ], [
  AC_ARG_ENABLE([fuzz],
    [AS_HELP_STRING([--enable-fuzz],
      [build the libFuzzer targets with make fuzz (needs CC=clang CXX=clang++)])])
  FUZZ_LDFLAGS=""
  rdmx_fuzz=no
  AS_IF([test "x$enable_fuzz" = xyes], [
    AS_IF([test "x$enable_tsan" = xyes],
      [AC_MSG_ERROR([--enable-fuzz builds with AddressSanitizer; it cannot be combined with --enable-tsan])])
    rdmx_save_CXXFLAGS=$CXXFLAGS
    rdmx_save_LDFLAGS=$LDFLAGS
    CXXFLAGS="$CXXFLAGS -fsanitize=fuzzer,address,undefined"
    AC_MSG_CHECKING([whether $CXX links libFuzzer targets])
    AC_LINK_IFELSE([AC_LANG_SOURCE([[#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--enable-fuzz needs clang with libFuzzer: ../configure --enable-fuzz CC=clang CXX=clang++
(Debian: apt-get install clang libclang-rt-dev), or run scripts/fuzz, which does both])])
    CXXFLAGS=$rdmx_save_CXXFLAGS
    LDFLAGS=$rdmx_save_LDFLAGS
    # Coverage feedback everywhere, libFuzzer's main only in the targets.
    SANITIZER_FLAGS="$SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined"
    SANITIZER_FLAGS="$SANITIZER_FLAGS -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    FUZZ_LDFLAGS="-fsanitize=fuzzer"
    rdmx_fuzz=yes
    rdmx_sanitizers=$SANITIZER_FLAGS
  ])
  AC_SUBST([FUZZ_LDFLAGS])
  AM_CONDITIONAL([ENABLE_FUZZ], [test "x$rdmx_fuzz" = xyes])
])
