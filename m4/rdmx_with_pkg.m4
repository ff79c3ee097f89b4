# RDMX_WITH_PKG(NAME, MODULES, DEBIAN-PACKAGES, WHAT)
# ---------------------------------------------------
# Shared body of every optional-dependency check: adds --with-NAME=yes|no|auto,
# looks MODULES up with pkg-config, and sets
#   rdmx_have_NAME = yes|no, rdmx_why_NAME = a reason for the summary,
#   NAME_CFLAGS / NAME_LIBS (upper-cased NAME), AM_CONDITIONAL HAVE_NAME,
#   and the C macro RDMX_HAVE_NAME.
# "yes" fails configure when the modules are missing, naming the Debian packages;
# "auto" (the default) builds what is found; "no" leaves the part out.
AC_DEFUN([RDMX_WITH_PKG], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1=yes|no|auto], [$4 (default: auto)])],
    [], [with_$1=auto])
  AS_CASE([$with_$1],
    [yes|no|auto], [],
    [AC_MSG_ERROR([--with-$1='$with_$1' is not accepted; use yes, no or auto])])
  rdmx_have_$1=no
  AS_IF([test "x$with_$1" = xno],
    [rdmx_why_$1="disabled by --with-$1=no"],
    [PKG_CHECK_MODULES(m4_toupper([$1]), [$2],
       [rdmx_have_$1=yes; rdmx_why_$1="found ($2)"],
       [rdmx_why_$1="not found: $2 (apt-get install $3)"
        AS_IF([test "x$with_$1" = xyes],
          [AC_MSG_ERROR([--with-$1=yes but $2 was not found by pkg-config.
Install the Debian packages: apt-get install $3])])])])
  AM_CONDITIONAL(m4_toupper([HAVE_$1]), [test "x$rdmx_have_$1" = xyes])
  AS_IF([test "x$rdmx_have_$1" = xyes],
    [AC_DEFINE(m4_toupper([RDMX_HAVE_$1]), [1], [1 when $4 is built, else 0.])],
    [AC_DEFINE(m4_toupper([RDMX_HAVE_$1]), [0], [1 when $4 is built, else 0.])])
])
