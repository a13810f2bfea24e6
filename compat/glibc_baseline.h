/* glibc baseline: binaries built on a new glibc that load on glibc 2.17 and later.
 *
 * The top-level meson.build force-includes this header (-include) into every C file of the
 * project on x86-64 and aarch64 glibc. A reference to a libc function binds, at link time, to
 * the default version of that function in the libc linked against; glibc 2.34 gave the
 * functions it moved from libdl and libpthread into libc new default versions (GLIBC_2.34), and
 * glibc 2.33 replaced the stat wrappers, so a binary built on Debian 12 would refuse to load on
 * RHEL 8 or Ubuntu 20.04. Each .symver below binds the references in the file that includes
 * it to the version glibc 2.17 had; a .symver for a function the file does not call emits
 * nothing. libdl.so.2 and libpthread.so.0 stay NEEDED (meson.build) because glibc 2.17 keeps
 * these functions there: ld.so matches the version by name in every object it has loaded.
 *
 * abi/check_glibc_policy.py names any reference above GLIBC_2.17 that slips through: add the
 * function here with the newest version of it that is not above 2.17 (`objdump -T` of libc.so.6
 * lists them). Functions whose default version is not above 2.17 need no line. See
 * docs/release.md. */
#ifndef NCCLSHIM_GLIBC_BASELINE_H
#define NCCLSHIM_GLIBC_BASELINE_H

#include <sys/stat.h>

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))

#if defined(__x86_64__)
#define NCCLSHIM_GLIBC_2_2_5 "GLIBC_2.2.5"
#define NCCLSHIM_GLIBC_2_3_3 "GLIBC_2.3.3"
#else /* aarch64: GLIBC_2.17 is the port's first version, so every old function has it. */
#define NCCLSHIM_GLIBC_2_2_5 "GLIBC_2.17"
#define NCCLSHIM_GLIBC_2_3_3 "GLIBC_2.17"
#endif

#define NCCLSHIM_GLIBC_PIN(name, version) __asm__(".symver " #name ", " #name "@" version)

/* In libdl.so.2 up to glibc 2.33. */
NCCLSHIM_GLIBC_PIN(dlopen, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(dlsym, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(dlclose, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(dlerror, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(dlinfo, NCCLSHIM_GLIBC_2_3_3);
NCCLSHIM_GLIBC_PIN(dladdr, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(dladdr1, NCCLSHIM_GLIBC_2_3_3);

/* In libpthread.so.0 up to glibc 2.33. */
NCCLSHIM_GLIBC_PIN(pthread_create, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_once, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_join, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_key_create, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_getspecific, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_key_delete, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_setspecific, NCCLSHIM_GLIBC_2_2_5);
NCCLSHIM_GLIBC_PIN(pthread_condattr_setclock, NCCLSHIM_GLIBC_2_3_3);

/* glibc 2.33 added fstat and stat as functions (GLIBC_2.33); 2.17 has only __fxstat64 and
 * __xstat64, whose first
 * argument is the layout of struct stat the caller expects: 1 on x86-64, 0 on aarch64. With
 * LP64, struct stat and struct stat64 are the same. The macro follows <sys/stat.h>, included
 * above, so the declarations there keep their own names. */
#if defined(__x86_64__)
#define NCCLSHIM_GLIBC_STAT_LAYOUT 1
#else
#define NCCLSHIM_GLIBC_STAT_LAYOUT 0
#endif
extern int ncclshim_glibc_fxstat64(int layout, int fd, struct stat *st) __asm__("__fxstat64");
NCCLSHIM_GLIBC_PIN(__fxstat64, NCCLSHIM_GLIBC_2_2_5);
static inline int ncclshim_glibc_fstat(int fd, struct stat *st) {
  return ncclshim_glibc_fxstat64(NCCLSHIM_GLIBC_STAT_LAYOUT, fd, st);
}
#define fstat ncclshim_glibc_fstat
extern int ncclshim_glibc_xstat64(int layout, const char *path,
                                  struct stat *st) __asm__("__xstat64");
NCCLSHIM_GLIBC_PIN(__xstat64, NCCLSHIM_GLIBC_2_2_5);
static inline int ncclshim_glibc_stat(const char *path, struct stat *st) {
  return ncclshim_glibc_xstat64(NCCLSHIM_GLIBC_STAT_LAYOUT, path, st);
}
/* Function-like, so that `struct stat` keeps its name. */
#define stat(path, st) ncclshim_glibc_stat(path, st)

#endif /* glibc on x86-64 or aarch64 */
#endif /* NCCLSHIM_GLIBC_BASELINE_H */
