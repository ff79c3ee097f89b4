# RDMX_CHECK_SANITIZERS: --enable-asan, --enable-ubsan, --enable-tsan.
AC_DEFUN([RDMX_CHECK_SANITIZERS], [
  SANITIZER_FLAGS=""
  AC_ARG_ENABLE([asan], [AS_HELP_STRING([--enable-asan], [build with AddressSanitizer])])
  AC_ARG_ENABLE([ubsan], [AS_HELP_STRING([--enable-ubsan], [build with UndefinedBehaviorSanitizer])])
  AC_ARG_ENABLE([tsan], [AS_HELP_STRING([--enable-tsan], [build with ThreadSanitizer])])
  AS_IF([test "x$enable_asan" = xyes && test "x$enable_tsan" = xyes],
    [AC_MSG_ERROR([--enable-asan and --enable-tsan cannot be combined; pick one])])
  AS_IF([test "x$enable_asan" = xyes], [SANITIZER_FLAGS="$SANITIZER_FLAGS -fsanitize=address"])
  AS_IF([test "x$enable_ubsan" = xyes], [SANITIZER_FLAGS="$SANITIZER_FLAGS -fsanitize=undefined -fno-sanitize-recover=undefined"])
  AS_IF([test "x$enable_tsan" = xyes], [
    SANITIZER_FLAGS="$SANITIZER_FLAGS -fsanitize=thread"
    # Open MPI's headers use atomic_thread_fence, which g++ warns TSan cannot see
    # (-Wtsan); with -Werror that would stop the component's build. The warning is about
    # their code and TSan's reach, not rdmx's: keep it a warning.
    AC_LANG_PUSH([C])
    rdmx_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror -Wno-error=tsan"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [SANITIZER_FLAGS="$SANITIZER_FLAGS -Wno-error=tsan"])
    CFLAGS=$rdmx_save_CFLAGS
    AC_LANG_POP([C])
  ])
  AS_IF([test -n "$SANITIZER_FLAGS"], [SANITIZER_FLAGS="$SANITIZER_FLAGS -fno-omit-frame-pointer"])
  rdmx_sanitizers=${SANITIZER_FLAGS:-none}
  AC_SUBST([SANITIZER_FLAGS])
])
