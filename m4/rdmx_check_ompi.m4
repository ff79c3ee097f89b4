# RDMX_CHECK_OMPI: Open MPI 4.1 development headers, for the MTL component in plugin/.
# --with-ompi=DIR names an installation prefix (DIR/include, DIR/lib); otherwise the
# system's mpicc --showme (Debian: libopenmpi-dev) tells where they are.
AC_DEFUN([RDMX_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=yes|no|auto|DIR],
                    [the Open MPI MTL component, built against Open MPI 4.1 devel headers (default: auto)])],
    [], [with_ompi=auto])
  rdmx_have_ompi=no
  OMPI_CPPFLAGS=""; OMPI_CFLAGS=""; OMPI_LIBS=""; OMPI_COMPONENT_DIR=""
  AS_CASE([$with_ompi],
    [no], [rdmx_why_ompi="disabled by --with-ompi=no"],
    [yes|auto], [
      AC_PATH_PROG([MPICC], [mpicc])
      AS_IF([test -n "$MPICC"], [
        OMPI_CPPFLAGS=`$MPICC --showme:incdirs 2>/dev/null | sed 's/^/-I/; s/ / -I/g'`
        OMPI_LIBDIRS=`$MPICC --showme:libdirs 2>/dev/null`])],
    [
      AS_IF([test -d "$with_ompi/include"], [],
        [AC_MSG_ERROR([--with-ompi=$with_ompi: no include/ directory there; give an Open MPI installation prefix, or yes/no/auto])])
      OMPI_CPPFLAGS="-I$with_ompi/include -I$with_ompi/include/openmpi"
      OMPI_LIBDIRS="$with_ompi/lib"])
  AS_IF([test "x$with_ompi" != xno], [
    rdmx_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    # Checked in C: the component's Open MPI-facing glue is C (the 4.1 headers do not
    # compile as C++ without patching a macro).
    AC_LANG_PUSH([C])
    AC_CHECK_HEADER([ompi/mca/mtl/mtl.h], [rdmx_have_ompi=yes], [], [
#include "ompi_config.h"
])
    AC_LANG_POP([C])
    CPPFLAGS=$rdmx_save_CPPFLAGS
    AS_IF([test "x$rdmx_have_ompi" = xyes], [
      rdmx_ompi_libdir=`echo $OMPI_LIBDIRS | cut -d' ' -f1`
      OMPI_LIBS="-L$rdmx_ompi_libdir -lmpi -lopen-rte -lopen-pal"
      OMPI_COMPONENT_DIR="$rdmx_ompi_libdir/openmpi3"
      AS_IF([test -d "$OMPI_COMPONENT_DIR"], [], [OMPI_COMPONENT_DIR="$rdmx_ompi_libdir/openmpi"])
      # Open MPI was built with -mcx16 on x86_64: its inline atomics (opal_lifo, behind
      # ompi_message_alloc) use 128-bit compare-and-swap, which without the flag becomes
      # a call to __sync_val_compare_and_swap_16, a symbol no library defines.
      AC_LANG_PUSH([C])
      rdmx_save_CFLAGS=$CFLAGS
      CFLAGS="$CFLAGS -mcx16"
      AC_MSG_CHECKING([whether $CC accepts -mcx16 (for Open MPI's 128-bit atomics)])
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
        [AC_MSG_RESULT([yes]); OMPI_CFLAGS="-mcx16"], [AC_MSG_RESULT([no])])
      CFLAGS=$rdmx_save_CFLAGS
      AC_LANG_POP([C])
      rdmx_why_ompi="found (headers via ${MPICC:-$with_ompi}, components in $OMPI_COMPONENT_DIR)"],
      [rdmx_why_ompi="not found: ompi/mca/mtl/mtl.h (apt-get install libopenmpi-dev openmpi-bin)"
       AS_IF([test "x$with_ompi" != xauto],
         [AC_MSG_ERROR([--with-ompi=$with_ompi but the Open MPI devel headers (ompi/mca/mtl/mtl.h) were not found.
Install the Debian packages: apt-get install libopenmpi-dev openmpi-bin])])])])
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
                    [where make install puts mca_mtl_rdmx.so (default: LIBDIR/rdmx/openmpi)])],
    [OMPI_COMPONENT_DIR=$withval], [OMPI_COMPONENT_DIR='${libdir}/rdmx/openmpi'])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_CFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_COMPONENT_DIR])
  AM_CONDITIONAL([HAVE_OMPI], [test "x$rdmx_have_ompi" = xyes])
])
