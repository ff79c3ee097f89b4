# RDMX_OMPI_INTERFACE: which Open MPI series the component builds against and what its
# MTL interface looks like, once RDMX_CHECK_OMPI has found the headers (OMPI_CPPFLAGS).
# Sets
#   rdmx_ompi_version   e.g. 4.1.4 or 5.0.7, from mpi.h
#   rdmx_ompi_series    the major version, 4 or 5 (others are refused)
#   rdmx_ompi_ok        yes, or no with rdmx_ompi_problem saying why
#   OMPI_MTL_DEFS       the MTL_RDMX_OMPI_* macros plugin/mtl_rdmx_compat.h reads
# and adds to OMPI_CPPFLAGS what Open MPI 5's headers need besides their own directory:
# PMIx's headers, and the threads and timer implementation headers Debian 13's
# libopenmpi-dev leaves out, taken from an Open MPI source tree of the same version
# (--with-ompi-source=DIR).

# _RDMX_OMPI_INCDIR: the directory of opal_config.h among OMPI_CPPFLAGS' -I options.
AC_DEFUN([_RDMX_OMPI_INCDIR], [
  rdmx_ompi_incdir=""
  for rdmx_flag in $OMPI_CPPFLAGS; do
    rdmx_dir=`echo "x$rdmx_flag" | sed -n 's/^x-I//p'`
    AS_IF([test -n "$rdmx_dir" && test -f "$rdmx_dir/opal_config.h"],
      [rdmx_ompi_incdir=$rdmx_dir; break])
  done
])

# _RDMX_OMPI_HEADERS_COMPILE: whether ompi_config.h and the MTL's headers compile with
# CPPFLAGS (rdmx_ompi_compiles=yes|no).
AC_DEFUN([_RDMX_OMPI_HEADERS_COMPILE], [
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/mtl/mtl.h"]], [[]])],
    [rdmx_ompi_compiles=yes], [rdmx_ompi_compiles=no])
])

# _RDMX_OMPI_IMPL_HEADERS: the headers did not compile. opal_config.h names the headers of
# the threads and timer components Open MPI was built with (MCA_..._HEADER); where the
# installation lacks them, take them from --with-ompi-source, after every installed
# directory, and try again. Sets rdmx_ompi_ok=no with rdmx_ompi_problem when that fails.
AC_DEFUN([_RDMX_OMPI_IMPL_HEADERS], [
  rdmx_ompi_missing=""
  for rdmx_h in `sed -n 's/^#define MCA_.*_HEADER "\(.*\)"$/\1/p' "$rdmx_ompi_incdir/opal_config.h"`; do
    test -f "$rdmx_ompi_incdir/$rdmx_h" || rdmx_ompi_missing="$rdmx_ompi_missing $rdmx_h"
  done
  rdmx_ompi_ok=no
  AS_IF([test -z "$rdmx_ompi_missing"], [
    rdmx_ompi_problem="ompi_config.h, ompi/communicator/communicator.h and ompi/mca/mtl/mtl.h do not compile with '$OMPI_CPPFLAGS' (config.log says why)"],
  [test -z "$with_ompi_source"], [
    rdmx_ompi_problem="Open MPI $rdmx_ompi_version's headers in $rdmx_ompi_incdir lack$rdmx_ompi_missing (Debian 13's libopenmpi-dev does not ship them); give --with-ompi-source=DIR, an Open MPI $rdmx_ompi_version source tree (apt-get source openmpi)"],
  [
    AC_MSG_CHECKING([for$rdmx_ompi_missing in $with_ompi_source])
    rdmx_src_version=""
    AS_IF([test -f "$with_ompi_source/VERSION"], [
      rdmx_src_version=`. "$with_ompi_source/VERSION" 2>/dev/null && echo "$major.$minor.$release"`])
    AS_IF([test "x$rdmx_src_version" != "x$rdmx_ompi_version"], [
      AC_MSG_RESULT([no])
      AC_MSG_ERROR([--with-ompi-source=$with_ompi_source: its VERSION file says '$rdmx_src_version', but the installed Open MPI is $rdmx_ompi_version; give the source tree of the same version])])
    for rdmx_h in $rdmx_ompi_missing; do
      test -f "$with_ompi_source/$rdmx_h" ||
        AC_MSG_ERROR([--with-ompi-source=$with_ompi_source has no $rdmx_h])
    done
    AC_MSG_RESULT([yes])
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -idirafter $with_ompi_source"
    CPPFLAGS="$rdmx_save_CPPFLAGS $OMPI_CPPFLAGS"
    AC_MSG_CHECKING([whether the Open MPI headers compile with those from $with_ompi_source])
    _RDMX_OMPI_HEADERS_COMPILE
    AC_MSG_RESULT([$rdmx_ompi_compiles])
    AS_IF([test "x$rdmx_ompi_compiles" = xyes], [rdmx_ompi_ok=yes],
      [rdmx_ompi_problem="the Open MPI headers do not compile with '$OMPI_CPPFLAGS' (config.log says why)"])])
])

# RDMX_OMPI_SOURCE_ARG: --with-ompi-source=DIR (outside any conditional, so that it is
# always parsed).
AC_DEFUN([RDMX_OMPI_SOURCE_ARG], [
  AC_ARG_WITH([ompi-source],
    [AS_HELP_STRING([--with-ompi-source=DIR],
                    [an Open MPI source tree of the installed version, for the headers an installation lacks (Debian 13's libopenmpi-dev)])],
    [AS_IF([test -d "$with_ompi_source"], [],
       [AC_MSG_ERROR([--with-ompi-source=$with_ompi_source is not a directory])])],
    [with_ompi_source=""])
])

AC_DEFUN([RDMX_OMPI_INTERFACE], [
  rdmx_ompi_ok=yes
  rdmx_ompi_problem=""
  rdmx_ompi_ulfm=no
  OMPI_MTL_DEFS=""
  _RDMX_OMPI_INCDIR
  AC_LANG_PUSH([C])
  rdmx_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
  AC_COMPUTE_INT([rdmx_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [rdmx_ompi_major=""])
  AC_COMPUTE_INT([rdmx_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [rdmx_ompi_minor=""])
  AC_COMPUTE_INT([rdmx_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [rdmx_ompi_release=""])
  CPPFLAGS=$rdmx_save_CPPFLAGS
  rdmx_ompi_version="$rdmx_ompi_major.$rdmx_ompi_minor.$rdmx_ompi_release"
  rdmx_ompi_series=$rdmx_ompi_major
  AC_MSG_CHECKING([which Open MPI series the component builds against])
  AS_CASE([$rdmx_ompi_series],
    [4|5], [AC_MSG_RESULT([$rdmx_ompi_version])],
    [AC_MSG_RESULT([${rdmx_ompi_version}: not supported])
     rdmx_ompi_ok=no
     rdmx_ompi_problem="Open MPI '$rdmx_ompi_version' (mpi.h's OMPI_*_VERSION) is not a series rdmx supports: 4.1 and 5.0 are"])
  AS_IF([test "x$rdmx_ompi_ok" = xyes && test -z "$rdmx_ompi_incdir"], [
    rdmx_ompi_ok=no
    rdmx_ompi_problem="no opal_config.h in the -I directories of '$OMPI_CPPFLAGS'"])
  # Open MPI 5 includes PMIx's headers from its own (pmix-internal.h) and the component
  # calls PMIx through the modex macros.
  AS_IF([test "x$rdmx_ompi_ok" = xyes && test "$rdmx_ompi_series" -ge 5], [
    PKG_CHECK_MODULES([OMPI_PMIX], [pmix],
      [OMPI_CPPFLAGS="$OMPI_CPPFLAGS $OMPI_PMIX_CFLAGS"],
      [rdmx_ompi_ok=no
       rdmx_ompi_problem="Open MPI $rdmx_ompi_version needs PMIx's headers, which pkg-config does not find (apt-get install libpmix-dev)"])])
  AS_IF([test "x$rdmx_ompi_ok" = xyes], [
    CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
    OMPI_MTL_DEFS="-DMTL_RDMX_OMPI_SERIES=$rdmx_ompi_series"
    AC_MSG_CHECKING([whether the Open MPI headers compile])
    _RDMX_OMPI_HEADERS_COMPILE
    AC_MSG_RESULT([$rdmx_ompi_compiles])
    AS_IF([test "x$rdmx_ompi_compiles" = xno], [_RDMX_OMPI_IMPL_HEADERS])])
  AS_IF([test "x$rdmx_ompi_ok" = xyes], [
    # Open MPI 5: mtl_init reports whether the MTL takes accelerator buffers.
    AC_MSG_CHECKING([whether mtl_init has the accelerator_support out-parameter])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/mca/mtl/mtl.h"
mca_mtl_base_module_t* f(bool p, bool t, bool* a);]],
      [[_Static_assert(__builtin_types_compatible_p(__typeof__(&f), mca_mtl_base_component_init_fn_t), "");]])],
      [AC_MSG_RESULT([yes]); rdmx_ompi_init_accel=1], [AC_MSG_RESULT([no]); rdmx_ompi_init_accel=0])
    # Open MPI 5: the agreed 32-bit context id is read with ompi_comm_get_local_cid.
    AC_MSG_CHECKING([whether a communicator's context id is read with ompi_comm_get_local_cid])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/communicator/communicator.h"]],
      [[uint32_t (*get)(const ompi_communicator_t*) = ompi_comm_get_local_cid; (void)get;]])],
      [AC_MSG_RESULT([yes]); rdmx_ompi_local_cid=1], [AC_MSG_RESULT([no]); rdmx_ompi_local_cid=0])
    AC_MSG_CHECKING([whether Open MPI has ULFM (fault-tolerant MPI) compiled in])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#if !OPAL_ENABLE_FT_MPI
#error no ULFM
#endif]], [[]])],
      [AC_MSG_RESULT([yes]); rdmx_ompi_ulfm=yes], [AC_MSG_RESULT([no]); rdmx_ompi_ulfm=no])
    OMPI_MTL_DEFS="$OMPI_MTL_DEFS -DMTL_RDMX_OMPI_INIT_ACCEL=$rdmx_ompi_init_accel"
    OMPI_MTL_DEFS="$OMPI_MTL_DEFS -DMTL_RDMX_OMPI_LOCAL_CID=$rdmx_ompi_local_cid"])
  CPPFLAGS=$rdmx_save_CPPFLAGS
  AC_LANG_POP([C])
  AC_SUBST([OMPI_MTL_DEFS])
])
