dnl config.m4 - the shmf PHP extension, built with phpize against libshmf.
dnl
dnl   phpize && ./configure --with-shmf && make
dnl
dnl libshmf is found with pkg-config (shmf.pc, from "meson install"); to
dnl build against a build tree instead, set SHMF_CFLAGS and SHMF_LIBS, e.g.
dnl   SHMF_CFLAGS="-I$SRC/include" SHMF_LIBS="-L$BUILD/libclient -lshmf" ./configure --with-shmf
dnl (bindings/php/build.sh does this).

PHP_ARG_WITH([shmf],
  [for shmf support],
  [AS_HELP_STRING([--with-shmf], [Include shmf support: Bloom and cuckoo filters in shared memory (libshmf)])])

if test "$PHP_SHMF" != "no"; then
  PKG_CHECK_MODULES([SHMF], [shmf])

  PHP_EVAL_INCLINE([$SHMF_CFLAGS])
  dnl As given, not through PHP_EVAL_LIBLINE, which adds a run path for
  dnl every -L: an installed libshmf is found by the dynamic linker; a
  dnl build tree's SHMF_LIBS carries its own -Wl,-rpath.
  SHMF_SHARED_LIBADD="$SHMF_LIBS"

  dnl Fail here, with a clear message, rather than at load time.
  old_CFLAGS=$CFLAGS; old_LIBS=$LIBS
  CFLAGS="$CFLAGS $SHMF_CFLAGS"; LIBS="$LIBS $SHMF_LIBS"
  AC_MSG_CHECKING([that libshmf links])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <shmf.h>]], [[return shmf_strerror(SHMF_E_NOTFOUND) == 0;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_ERROR([cannot link against libshmf with SHMF_CFLAGS='$SHMF_CFLAGS' SHMF_LIBS='$SHMF_LIBS'])])
  CFLAGS=$old_CFLAGS; LIBS=$old_LIBS

  PHP_SUBST([SHMF_SHARED_LIBADD])
  PHP_ADD_EXTENSION_DEP(shmf, spl)
  PHP_NEW_EXTENSION([shmf], [shmf.c handles.c], [$ext_shared], , [-Wall -Wextra])
fi
