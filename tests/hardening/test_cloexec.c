/* Every file ncclshim opens is opened close-on-exec, so that no descriptor of it leaks into a
 * program the host process starts. This program defines open/openat/opendir/fopen (and their
 * 64-bit and fortified names): libncclshim.so's calls bind to these (the executable comes
 * first in symbol lookup), which call libc's and look at the descriptor's FD_CLOEXEC. Then it
 * drives every path that opens a file: the ELF check, the build tag, the fingerprint, the
 * well-known places (a directory listing), and the CUDA search. dlopen's own opens happen
 * inside ld.so, which always uses O_CLOEXEC, and cannot be seen from here. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hardening.h"
#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

static int watching, opened, leaky;
static char leaky_what[512];

static void *next(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (f == NULL) abort();
  return f;
}

static int seen(int fd, const char *how, const char *path) {
  if (fd >= 0 && watching) {
    opened++;
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || !(flags & FD_CLOEXEC)) {
      leaky++;
      snprintf(leaky_what, sizeof(leaky_what), "%s(%s) without close-on-exec", how, path);
    }
  }
  return fd;
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name)                                                                 \
  int name(const char *path, int flags, ...);                                           \
  int name(const char *path, int flags, ...) {                                          \
    va_list ap;                                                                         \
    va_start(ap, flags);                                                                \
    mode_t mode = mode_arg(flags, ap);                                                  \
    va_end(ap);                                                                         \
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))next(#name); \
    return seen(real(path, flags, mode), #name, path);                                  \
  }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                                                         \
  int name(int dirfd, const char *path, int flags, ...);                                          \
  int name(int dirfd, const char *path, int flags, ...) {                                         \
    va_list ap;                                                                                   \
    va_start(ap, flags);                                                                          \
    mode_t mode = mode_arg(flags, ap);                                                            \
    va_end(ap);                                                                                   \
    int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))next(#name); \
    return seen(real(dirfd, path, flags, mode), #name, path);                                     \
  }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

#define FORTIFIED(name)                                                       \
  int name(const char *path, int flags);                                      \
  int name(const char *path, int flags) {                                     \
    int (*real)(const char *, int) = (int (*)(const char *, int))next(#name); \
    return seen(real(path, flags), #name, path);                              \
  }
FORTIFIED(__open_2)
FORTIFIED(__open64_2)

DIR *opendir(const char *path) {
  DIR *(*real)(const char *) = (DIR * (*)(const char *)) next("opendir");
  DIR *dir = real(path);
  if (dir != NULL) seen(dirfd(dir), "opendir", path);
  return dir;
}

#define FOPEN_LIKE(name)                                      \
  FILE *name(const char *path, const char *mode);             \
  FILE *name(const char *path, const char *mode) {            \
    FILE *(*real)(const char *, const char *) =               \
        (FILE * (*)(const char *, const char *)) next(#name); \
    FILE *f = real(path, mode);                               \
    if (f != NULL) seen(fileno(f), #name, path);              \
    return f;                                                 \
  }
FOPEN_LIKE(fopen)
FOPEN_LIKE(fopen64)

static void test_every_open_is_cloexec(void **state) {
  (void)state;
  char *root = scratch_dir();
  char *venv = join(root, "venv");
  make_dirs(join(venv, "lib/python3.12/site-packages/nvidia/nccl/lib"));
  setenv("VIRTUAL_ENV", venv, 1);

  watching = 1;
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = fake_path("2.28.9");
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK); /* the ELF check */
  int after_check = opened;
  ncclshim_nccl_build(nccl); /* reads the file for NCCL's banner */
  char fingerprint[128];
  ncclshim_nccl_fingerprint(nccl, fingerprint, sizeof(fingerprint)); /* hashes the file */
  int after_file_reads = opened;
  ncclshim_nccl_close(nccl);

  /* The plain search, asking for a version nothing has: it goes on to the well-known
   * places and lists $VIRTUAL_ENV/lib. */
  ncclshim_nccl_options none = NCCLSHIM_NCCL_OPTIONS_INIT;
  none.min_version = 990000;
  int before_places = opened;
  ncclshim_nccl_open(&none, &nccl);
  int after_places = opened;
  ncclshim_nccl_close(nccl);

  ncclshim_cuda_options cuda_options = NCCLSHIM_CUDA_OPTIONS_INIT;
  cuda_options.path = getenv("CUDA_FAKE");
  ncclshim_cuda *cuda = NULL;
  assert_int_equal(ncclshim_cuda_open(&cuda_options, &cuda), NCCLSHIM_OK);
  ncclshim_cuda_close(cuda);
  watching = 0;

  print_message("%d files opened by ncclshim, %d without close-on-exec\n", opened, leaky);
  /* Each path above opened something: the interposition works, the test can fail. */
  assert_true(after_check >= 1);
  assert_true(after_file_reads >= after_check + 1);
  assert_true(after_places >= before_places + 1);
  if (leaky) fail_msg("%d descriptor(s) without close-on-exec, e.g. %s", leaky, leaky_what);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_open_is_cloexec)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
