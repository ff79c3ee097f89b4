# RDMX_CHECK_OMPI: Open MPI development headers (4.1 or 5.0), for the MTL component in
# plugin/. --with-ompi=DIR names an installation prefix (DIR/include, DIR/lib); otherwise
# the system's mpicc --showme (Debian: libopenmpi-dev) tells where they are. Which series
# it is and what its MTL interface looks like: RDMX_OMPI_INTERFACE
# (m4/rdmx_ompi_interface.m4).
AC_DEFUN([RDMX_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=yes|no|auto|DIR],
                    [the Open MPI MTL component, built against Open MPI 4.1 or 5.0 devel headers (default: auto)])],
    [], [with_ompi=auto])
  RDMX_OMPI_SOURCE_ARG
  rdmx_have_ompi=no
  OMPI_CPPFLAGS=""; OMPI_CFLAGS=""; OMPI_LIBS=""; OMPI_COMPONENT_DIR=""; OMPI_MTL_DEFS=""
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
    # The presence of the MTL interface only; whether the headers compile, and what
    # they need for it, is RDMX_OMPI_INTERFACE's business.
    rdmx_found_mtl_h=no
    for rdmx_flag in $OMPI_CPPFLAGS; do
      rdmx_dir=`echo "x$rdmx_flag" | sed -n 's/^x-I//p'`
      AS_IF([test -n "$rdmx_dir" && test -f "$rdmx_dir/ompi/mca/mtl/mtl.h"], [rdmx_found_mtl_h=yes])
    done
    AC_MSG_CHECKING([for ompi/mca/mtl/mtl.h])
    AC_MSG_RESULT([$rdmx_found_mtl_h])
    AS_IF([test "x$rdmx_found_mtl_h" = xyes], [
      RDMX_OMPI_INTERFACE
      AS_IF([test "x$rdmx_ompi_ok" = xyes], [rdmx_have_ompi=yes],
        [rdmx_why_ompi="not usable: $rdmx_ompi_problem"
         AS_IF([test "x$with_ompi" != xauto],
           [AC_MSG_ERROR([--with-ompi=$with_ompi: $rdmx_ompi_problem])])])],
      [rdmx_why_ompi="not found: ompi/mca/mtl/mtl.h (apt-get install libopenmpi-dev openmpi-bin)"
       AS_IF([test "x$with_ompi" != xauto],
         [AC_MSG_ERROR([--with-ompi=$with_ompi but the Open MPI devel headers (ompi/mca/mtl/mtl.h) were not found.
Install the Debian packages: apt-get install libopenmpi-dev openmpi-bin])])])])
  AS_IF([test "x$rdmx_have_ompi" = xyes], [
    rdmx_ompi_libdir=`echo $OMPI_LIBDIRS | cut -d' ' -f1`
    # Open MPI 4's runtime layer is ORTE (libopen-rte); 5 has none of its own (PRRTE is a
    # separate program) and the component calls PMIx directly, through the modex macros.
    OMPI_LIBS="-L$rdmx_ompi_libdir -lmpi"
    AS_IF([ls "$rdmx_ompi_libdir"/libopen-rte.* >/dev/null 2>&1], [OMPI_LIBS="$OMPI_LIBS -lopen-rte"])
    OMPI_LIBS="$OMPI_LIBS -lopen-pal $OMPI_PMIX_LIBS"
    # Where this Open MPI looks for components (Debian: openmpi3 for 4.1, openmpi40 for
    # 5.0); shown in the summary, and used by make install only when asked for.
    rdmx_ompi_sysdir=""
    for rdmx_d in openmpi3 openmpi40 openmpi; do
      AS_IF([test -z "$rdmx_ompi_sysdir" && test -d "$rdmx_ompi_libdir/$rdmx_d"],
        [rdmx_ompi_sysdir="$rdmx_ompi_libdir/$rdmx_d"])
    done
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
    rdmx_ompi_what="Open MPI $rdmx_ompi_version"
    AS_IF([test "x$rdmx_ompi_ulfm" = xyes], [rdmx_ompi_what="$rdmx_ompi_what with ULFM"])
    rdmx_why_ompi="found $rdmx_ompi_what (headers via ${MPICC:-$with_ompi}${with_ompi_source:+ and $with_ompi_source}, components in ${rdmx_ompi_sysdir:-$rdmx_ompi_libdir})"])
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
