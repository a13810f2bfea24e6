/* Hostile files given by path (ncclshim_nccl_open / ncclshim_cuda_open with options.path):
 * each gives a clear status and a message naming the problem, the table stays callable, and
 * nothing crashes or hangs. test_broken.c already covers, for NCCL, a text file, a zero-byte
 * file, a directory, truncated files, a patched e_machine and an absent file; here are the
 * others, and the same kinds through the CUDA binding. */
#include <elf.h>
#include <limits.h>
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

static char *scratch;

static int setup(void **state) {
  (void)state;
  scratch = scratch_dir();
  return 0;
}

/* Messages are bounded: a 10,000-character path is cut, never overflowed. */
enum { MESSAGE_BOUND = 2048 };

/* ncclshim_<kind>_open with options.path alone (NCCL's and CUDA's bindings have options and
 * an open of one shape): nccl_at() and cuda_at(). */
#define DEFINE_OPEN_AT(kind, KIND)                                               \
  static ncclshim_status kind##_at(const char *path, ncclshim_##kind **handle) { \
    ncclshim_##kind##_options options = NCCLSHIM_##KIND##_OPTIONS_INIT;          \
    options.path = path;                                                         \
    *handle = NULL;                                                              \
    return ncclshim_##kind##_open(&options, handle);                             \
  }
DEFINE_OPEN_AT(nccl, NCCL)
DEFINE_OPEN_AT(cuda, CUDA)

/* The outcome of one open, checked without cmocka (also used in forked children); a failed
 * open must have tried the explicit path alone. */
static int check(const char *what, ncclshim_status got, ncclshim_status want, const char *message,
                 size_t attempts, const char *reason) {
  if (got == want && strstr(message, reason) != NULL && strlen(message) < MESSAGE_BOUND &&
      (got == NCCLSHIM_OK || attempts == 1))
    return 0;
  fprintf(stderr,
          "%s: status %s (want %s), message \"%.300s\" (want \"%s\", length %zu), %zu attempts\n",
          what, ncclshim_status_name(got), ncclshim_status_name(want), message, reason,
          strlen(message), attempts);
  return 1;
}

static int open_nccl(const char *path, ncclshim_status want, const char *reason) {
  ncclshim_nccl *nccl;
  ncclshim_status got = nccl_at(path, &nccl);
  int bad = check("nccl", got, want, ncclshim_nccl_message(nccl), ncclshim_nccl_attempt_count(nccl),
                  reason);
  if (got != NCCLSHIM_OK) {
    /* The table still answers, with the reason. */
    int r = ncclshim_nccl_functions(nccl)->ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL,
                                                         NULL);
    if (r != ncclInvalidUsage || strstr(ncclshim_last_error(), reason) == NULL) {
      fprintf(stderr, "nccl table after a failed open: result %d, \"%.300s\"\n", r,
              ncclshim_last_error());
      bad = 1;
    }
  }
  ncclshim_nccl_close(nccl);
  return bad;
}

static int open_cuda(const char *path, ncclshim_status want, const char *reason) {
  ncclshim_cuda *cuda;
  ncclshim_status got = cuda_at(path, &cuda);
  int bad = check("cuda", got, want, ncclshim_cuda_message(cuda), ncclshim_cuda_attempt_count(cuda),
                  reason);
  ncclshim_cuda_close(cuda);
  return bad;
}

/* Both bindings, for a file neither can use. */
static void expect_both(const char *path, ncclshim_status want, const char *reason) {
  assert_int_equal(open_nccl(path, want, reason), 0);
  assert_int_equal(open_cuda(path, want, reason), 0);
}

static void test_directory(void **state) {
  (void)state;
  assert_int_equal(open_cuda(scratch, NCCLSHIM_LOAD_FAILED, "is a directory"), 0);
  /* A directory under the library's own name. */
  char *dir = join(scratch, "libnccl.so.2");
  make_dirs(dir);
  expect_both(dir, NCCLSHIM_LOAD_FAILED, "is a directory");
}

static void test_zero_byte(void **state) {
  (void)state;
  char *path = join(scratch, "zero.so");
  hs_write(path, "", 0);
  assert_int_equal(open_cuda(path, NCCLSHIM_LOAD_FAILED, "empty file"), 0);
}

typedef struct unreadable {
  const char *file;   /* mode 000 */
  const char *inside; /* a file in a mode-000 directory */
} unreadable;

static int open_unreadable(void *arg) {
  const unreadable *u = arg;
  if (geteuid() == 0 && hs_become_nobody() != 0) return 77;
  return open_nccl(u->file, NCCLSHIM_LOAD_FAILED, "cannot open: Permission denied") |
         open_cuda(u->file, NCCLSHIM_LOAD_FAILED, "cannot open: Permission denied") |
         open_nccl(u->inside, NCCLSHIM_LOAD_FAILED, "cannot open: Permission denied");
}

static void test_unreadable(void **state) {
  (void)state;
  /* Root reads every file: the opens run in a child that has given root up. */
  char *dir = join(scratch, "unreadable");
  make_dirs(dir);
  chmod(dir, 0755);
  char *file = join(dir, "libnccl.so.2");
  copy_file(fake_path("2.28.9"), file, (size_t)-1, 0);
  chmod(file, 0);
  char *closed = join(scratch, "closed");
  make_dirs(closed);
  char *inside = join(closed, "libnccl.so.2");
  copy_file(fake_path("2.28.9"), inside, (size_t)-1, 0);
  chmod(closed, 0);
  chmod(scratch, 0755); /* mkdtemp made it 0700: nobody must reach the files */
  unreadable u = {file, inside};
  int status = hs_in_child(open_unreadable, &u, 20000);
  chmod(closed, 0755);
  if (status == 77) skip(); /* root, but cannot become another user here */
  assert_int_equal(status, 0);
}

static void test_symlink_loop(void **state) {
  (void)state;
  char *a = join(scratch, "loop-a.so"), *b = join(scratch, "loop-b.so");
  make_link(b, a);
  make_link(a, b);
  expect_both(a, NCCLSHIM_LOAD_FAILED, "cannot open: Too many levels of symbolic links");
  /* A loop in a directory part of the path. */
  char *through = join(a, "libnccl.so.2");
  expect_both(through, NCCLSHIM_LOAD_FAILED, "Too many levels of symbolic links");
}

/* A name no file can have is NOT_FOUND, never LOAD_FAILED (which means "a file exists but
 * could not be loaded"). */
static void test_long_path(void **state) {
  (void)state;
  char *path = hs_long_path(10000);
  assert_int_equal(strlen(path), 10000);
  expect_both(path, NCCLSHIM_NOT_FOUND, "cannot open: the path is too long to name a file");
  /* One component of 10,000 characters (NAME_MAX is 255). */
  path[0] = '/';
  memset(path + 1, 'b', 9999);
  expect_both(path, NCCLSHIM_NOT_FOUND, "cannot open: the path is too long to name a file");
  /* The thread's message is bounded too. */
  assert_true(strlen(ncclshim_last_error()) < MESSAGE_BOUND);
}

static void test_non_utf8_path(void **state) {
  (void)state;
  char *dir = join(scratch, "\xff\xfe\x80-bad-\xc3\x28-utf8");
  make_dirs(dir);
  char *nccl_file = join(dir, "libnccl.so.2");
  copy_file(fake_path("2.28.9"), nccl_file, (size_t)-1, 0);
  ncclshim_nccl *nccl;
  assert_int_equal(nccl_at(nccl_file, &nccl), NCCLSHIM_OK);
  char real[PATH_MAX];
  assert_non_null(realpath(nccl_file, real));
  assert_string_equal(ncclshim_nccl_path(nccl), real); /* the bytes, unchanged */
  assert_non_null(strstr(ncclshim_nccl_message(nccl), "\xff\xfe\x80"));
  assert_int_equal(ncclshim_nccl_version(nccl), 22809);
  ncclshim_nccl_close(nccl);

  char *cuda_file = join(dir, "libcuda.so.1");
  copy_file(getenv("CUDA_FAKE"), cuda_file, (size_t)-1, 0);
  assert_int_equal(open_cuda(cuda_file, NCCLSHIM_OK, "\xff\xfe\x80"), 0);

  /* And a refused file whose name is not UTF-8: the name is in the message as it is. */
  char *bad = join(dir, "\xfe\xff.so");
  hs_write(bad, "not ELF", 7);
  expect_both(bad, NCCLSHIM_LOAD_FAILED, "\xfe\xff.so: not an ELF file");
}

static void test_foreign_architecture(void **state) {
  (void)state;
  /* A real shared object built by a cross compiler. */
  const char *foreign = getenv("FOREIGN_LIB");
  char machine[64];
  if (foreign != NULL && foreign[0] != '\0') {
    snprintf(machine, sizeof(machine), "ELF for machine type %s, this machine is type",
             getenv("FOREIGN_MACHINE"));
    expect_both(foreign, NCCLSHIM_LOAD_FAILED, machine);
  } else {
    print_message("no cross compiler was found: only the patched headers below are tried\n");
  }
  /* 32-bit and big-endian versions of a good library's header. */
  char *class32 = join(scratch, "class32.so");
  copy_file(fake_path("2.28.9"), class32, (size_t)-1, 0);
  hs_patch(class32, EI_CLASS, ELFCLASS32);
  expect_both(class32, NCCLSHIM_LOAD_FAILED, "ELF class 1, this process needs class 2");
  char *msb = join(scratch, "msb.so");
  copy_file(fake_path("2.28.9"), msb, (size_t)-1, 0);
  hs_patch(msb, EI_DATA, ELFDATA2MSB);
  expect_both(msb, NCCLSHIM_LOAD_FAILED, "ELF byte order does not match this machine");
}

static int open_fifo(void *path) {
  return open_nccl(path, NCCLSHIM_LOAD_FAILED, "is not a regular file") |
         open_cuda(path, NCCLSHIM_LOAD_FAILED, "is not a regular file");
}

static void test_fifo(void **state) {
  (void)state;
  /* Opening a FIFO for reading waits for a writer: the check must not. */
  char *fifo = join(scratch, "libnccl.so.2.fifo");
  assert_int_equal(mkfifo(fifo, 0644), 0);
  int status = hs_in_child(open_fifo, fifo, 10000);
  if (status == -1) fail_msg("opening a FIFO as a library hung (killed after 10 s)");
  assert_int_equal(status, 0);
}

static void test_devices(void **state) {
  (void)state;
  expect_both("/dev/null", NCCLSHIM_LOAD_FAILED, "is not a regular file");
  expect_both("/dev/zero", NCCLSHIM_LOAD_FAILED, "is not a regular file");
}

static void test_not_a_directory(void **state) {
  (void)state;
  char *file = join(scratch, "plain.so");
  copy_file(fake_path("2.28.9"), file, (size_t)-1, 0);
  char *slash = join(file, "");
  expect_both(slash, NCCLSHIM_NOT_FOUND, "cannot open: Not a directory");
  char *below = join(file, "libnccl.so.2");
  expect_both(below, NCCLSHIM_NOT_FOUND, "cannot open: Not a directory");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_directory),
      cmocka_unit_test(test_zero_byte),
      cmocka_unit_test(test_unreadable),
      cmocka_unit_test(test_symlink_loop),
      cmocka_unit_test(test_long_path),
      cmocka_unit_test(test_non_utf8_path),
      cmocka_unit_test(test_foreign_architecture),
      cmocka_unit_test(test_fifo),
      cmocka_unit_test(test_devices),
      cmocka_unit_test(test_not_a_directory),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
