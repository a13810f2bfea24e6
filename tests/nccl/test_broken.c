/* Explicit paths to broken, foreign or unsuitable files: each gives its own status and a
 * reason that names the problem, the table stays callable, and nothing crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"
#include "support.h"

static char *scratch;

static int make_scratch(void **state) {
  (void)state;
  scratch = scratch_dir();
  return 0;
}

/* Open `path` explicitly; expect `status` and `reason` in the message; check the fallback. */
static void expect(const char *path, int min_version, ncclshim_status status, const char *reason) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = path;
  options.min_version = min_version;
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), status);
  assert_non_null(nccl);
  assert_int_equal(ncclshim_nccl_status(nccl), status);
  if (strstr(ncclshim_nccl_message(nccl), reason) == NULL)
    fail_msg("message \"%s\" lacks \"%s\"", ncclshim_nccl_message(nccl), reason);
  assert_int_equal(ncclshim_nccl_version(nccl), 0);
  assert_null(ncclshim_nccl_path(nccl));
  assert_int_equal(ncclshim_nccl_capabilities(nccl), 0);
  /* An explicit path is used alone: exactly one attempt, no fallback search. */
  assert_int_equal(ncclshim_nccl_attempt_count(nccl), 1);
  assert_int_equal(ncclshim_nccl_attempt(nccl, 0)->how, NCCLSHIM_VIA_EXPLICIT);
  const ncclshim_nccl_table *table = ncclshim_nccl_functions(nccl);
  assert_int_equal(table->ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL, NULL),
                   ncclInvalidUsage);
  assert_non_null(strstr(ncclshim_last_error(), "ncclAllReduce: no NCCL is loaded"));
  assert_non_null(strstr(ncclshim_last_error(), reason));
  assert_string_equal(table->ncclGetErrorString(ncclInvalidUsage),
                      "invalid usage (run with NCCL_DEBUG=WARN for details)");
  assert_ptr_equal(table->ncclGetLastError(NULL), ncclshim_last_error());
  ncclshim_nccl_close(nccl);
}

/* The fakes broken in themselves, each opened explicitly by the case named first, with the
 * status and the reason it must give. */
static const struct broken_fake {
  const char *test;
  const char *variant;
  int min_version;
  ncclshim_status status;
  const char *reason;
} broken_fakes[] = {
    {"test_missing_required", "missing-required", 0, NCCLSHIM_MISSING_SYMBOLS,
     "lacks required functions: ncclAllReduce ncclSend"},
    {"test_version_query", "version-fails", 0, NCCLSHIM_BAD_VERSION,
     "ncclGetVersion failed: result 2"},
    {"test_version_query", "version-zero", 0, NCCLSHIM_BAD_VERSION,
     "answered 0, which is no NCCL version"},
    {"test_version_query", "version-negative", 0, NCCLSHIM_BAD_VERSION, "answered -5"},
    {"test_version_query", "version-silent", 0, NCCLSHIM_BAD_VERSION,
     "succeeded but wrote no version"},
    {"test_version_query", "no-version", 0, NCCLSHIM_NOT_NCCL, "no ncclGetVersion"},
    {"test_wrong_major", "3.0.0", 0, NCCLSHIM_WRONG_MAJOR, "NCCL 3.0.0 has major version 3"},
    {"test_too_old", "2.21.5", 22800, NCCLSHIM_VERSION_TOO_OLD,
     "NCCL 2.21.5 is older than the 2.28.0 asked for"},
};

/* Each fake of broken_fakes whose case runs (its name in *state). */
static void test_broken_fakes(void **state) {
  const char *test = *state;
  int opened = 0;
  for (size_t i = 0; i < sizeof(broken_fakes) / sizeof(broken_fakes[0]); i++) {
    const struct broken_fake *f = &broken_fakes[i];
    if (strcmp(f->test, test) != 0) continue;
    expect(fake_path(f->variant), f->min_version, f->status, f->reason);
    opened++;
  }
  assert_true(opened > 0);
}
#define BROKEN_FAKES(name) TABLE_CASE(name, test_broken_fakes, #name)

static void test_not_elf(void **state) {
  (void)state;
  char *path = join(scratch, "text.so");
  FILE *f = fopen(path, "w");
  fputs("INPUT(libnccl.so.2)\n", f);
  fclose(f);
  expect(path, 0, NCCLSHIM_LOAD_FAILED, "not an ELF file");
}

static void test_empty_and_directory(void **state) {
  (void)state;
  char *path = join(scratch, "empty.so");
  fclose(fopen(path, "w"));
  expect(path, 0, NCCLSHIM_LOAD_FAILED, "empty file");
  expect(scratch, 0, NCCLSHIM_LOAD_FAILED, "is a directory");
}

static void test_truncated(void **state) {
  (void)state;
  /* Headers intact, segments cut: the case that kills a process with SIGBUS in dlopen. */
  char *whole = fake_path("2.28.9");
  char *cut = join(scratch, "cut.so");
  copy_file(whole, cut, 4096, 0);
  expect(cut, 0, NCCLSHIM_LOAD_FAILED, "truncated: a loadable segment ends at byte");
  char *stub = join(scratch, "stub.so");
  copy_file(whole, stub, 40, 0);
  expect(stub, 0, NCCLSHIM_LOAD_FAILED, "truncated: 40 bytes");
}

/* The fake with another architecture's e_machine: foreign to the one this test was built for,
 * which is not the build machine's in a cross build. */
static void test_foreign_machine(void **state) {
  (void)state;
  char *path = join(scratch, "foreign.so");
  unsigned foreign = foreign_machine();
  copy_file(fake_path("2.28.9"), path, (size_t)-1, foreign);
  char reason[96];
  snprintf(reason, sizeof(reason), "ELF for machine type %u, this machine is type %u", foreign,
           own_machine());
  expect(path, 0, NCCLSHIM_LOAD_FAILED, reason);
}

static void test_absent_file(void **state) {
  (void)state;
  char *path = join(scratch, "absent.so");
  expect(path, 0, NCCLSHIM_NOT_FOUND, "No such file or directory");
}

/* A bare file name is a file in the current directory, never a library search (which would
 * find the machine's own NCCL). */
static void test_bare_name(void **state) {
  (void)state;
  assert_int_equal(chdir(scratch), 0);
  expect("libnccl.so.2", 0, NCCLSHIM_NOT_FOUND, "./libnccl.so.2");
  copy_file(fake_path("2.21.5"), "libnccl.so.2", (size_t)-1, 0);
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = "libnccl.so.2";
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_version(nccl), 22105);
  ncclshim_nccl_close(nccl);
}

static void test_bad_arguments(void **state) {
  (void)state;
  ncclshim_nccl *nccl = (ncclshim_nccl *)&nccl;
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.size = 4;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_INVALID_ARGUMENT);
  assert_ptr_equal(nccl, (ncclshim_nccl *)&nccl); /* untouched on failure */
  assert_non_null(strstr(ncclshim_last_error(), "too small"));
  options = (ncclshim_nccl_options)NCCLSHIM_NCCL_OPTIONS_INIT;
  options.min_version = -1;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_nccl_open(NULL, NULL), NCCLSHIM_INVALID_ARGUMENT);
  options = (ncclshim_nccl_options)NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = "";
  expect("", 0, NCCLSHIM_INVALID_ARGUMENT, "the path given is empty");
  ncclshim_nccl_close(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      BROKEN_FAKES(test_missing_required),  BROKEN_FAKES(test_version_query),
      BROKEN_FAKES(test_wrong_major),       BROKEN_FAKES(test_too_old),
      cmocka_unit_test(test_not_elf),       cmocka_unit_test(test_empty_and_directory),
      cmocka_unit_test(test_truncated),     cmocka_unit_test(test_foreign_machine),
      cmocka_unit_test(test_absent_file),   cmocka_unit_test(test_bare_name),
      cmocka_unit_test(test_bad_arguments),
  };
  return cmocka_run_group_tests(tests, make_scratch, NULL);
}
