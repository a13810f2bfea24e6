/* The drop-in library: NCCL's plain names and pnccl aliases forward every argument to the
 * loaded NCCL; loading waits for the first call; NCCL's calls to its own names come back
 * through the drop-in exactly once; with no NCCL or only the drop-in itself on the search
 * path, calls fail cleanly and say what was searched. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCCLSHIM_DECLARE_DEVICE_API /* the device API's names, as the drop-in exports them */
#include "ncclshim/ncclshim.h"

/* The drop-in carries its own copy of ncclshim: the message of a function the loaded NCCL
 * lacks is not libncclshim's ncclshim_last_error but comes back once, from the drop-in's
 * ncclGetLastError. The generic checks read it from here, which keeps it for a second look. */
static char dropin_message[2048];
static const char *dropin_last_error(void) {
  const char *text = ncclGetLastError(NULL);
  if (strcmp(text, "fake NCCL string") != 0)
    snprintf(dropin_message, sizeof(dropin_message), "%s", text);
  return dropin_message;
}
#define ncclshim_last_error dropin_last_error
#include "forward_check.h"
#undef ncclshim_last_error
#include "dropin_tests.h"

#define FORWARD_TAG plain_
#define FORWARD_CALLEE(name) name
FORWARD_DEFINE
#undef FORWARD_TAG
#undef FORWARD_CALLEE
#define FORWARD_TAG profiling_
#define FORWARD_CALLEE(name) p##name
FORWARD_DEFINE

static char *fake;
static char *self; /* this program, run again for the recording pass */

static void test_lazy_then_forwards(void **state) {
  (void)state;
  fake = getenv("NCCLSHIM_NCCL_LIBRARY");
  assert_non_null(fake);
  /* Nothing was loaded when the program started. */
  assert_null(dlopen(fake, RTLD_NOW | RTLD_NOLOAD));
  int version = 0;
  assert_int_equal(ncclGetVersion(&version), ncclSuccess);
  /* The fake's version: 2.28.9 unless the test names another (DROPIN_FAKE_VERSION). */
  const char *expected = getenv("DROPIN_FAKE_VERSION");
  assert_int_equal(version, expected ? atoi(expected) : 22809);
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  assert_int_equal(ncclshim_nccl_status(nccl), NCCLSHIM_OK);
  for (size_t i = 0; i < FORWARD_COUNT(forwarders_plain_); i++) forwarders_plain_[i](fake, nccl);
  for (size_t i = 0; i < FORWARD_COUNT(forwarders_profiling_); i++)
    forwarders_profiling_[i](fake, nccl);
}

static void test_nccl_calls_itself(void **state) {
  (void)state;
  ncclGroupEnd(); /* loads, if the test above did not run */
  void *(*call_self)(void) = (void *(*)(void))(uintptr_t)dlsym(dlopen(fake, RTLD_NOW | RTLD_NOLOAD),
                                                               "fake_nccl_call_self");
  assert_non_null(call_self);
  int (*calls)(void) =
      (int (*)(void))(uintptr_t)dlsym(dlopen(fake, RTLD_NOW | RTLD_NOLOAD), "fake_nccl_calls");
  int before = calls();
  void *target = call_self();
  /* The library's own call went to the drop-in's ncclGroupStart... */
  assert_ptr_equal(target, dlsym(RTLD_DEFAULT, "ncclGroupStart"));
  Dl_info info;
  assert_true(dladdr(target, &info) && strstr(info.dli_fname, "libncclshim-nccl") != NULL);
  /* ...which reached the library's own once: no loop, nothing counted twice. */
  assert_int_equal(calls() - before, 1);
  assert_string_equal(fake_last_call(fake)->function, "ncclGroupStart");
}

/* A function the loaded NCCL lacks: ncclshim's stub answers, and the thread's next
 * ncclGetLastError says why, once; the one after is NCCL's own again. */
static void test_missing_function_message(void **state) {
  (void)state;
  ncclComm_t comm = NULL;
  assert_int_equal(ncclCommGrow(NULL, 2, NULL, 0, &comm, NULL), ncclInvalidArgument);
  const char *message = ncclGetLastError(NULL);
  if (strstr(message, "ncclCommGrow needs NCCL >= 2.29.2") == NULL)
    fail_msg("message: %s", message);
  assert_string_equal(ncclGetLastError(NULL), "fake NCCL string");
}

static void expect_user(const char *const *env, const char *status_text) {
  scenario s;
  run_program(&s, getenv("DROPIN_USER"), NULL, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "version_result"), "2"); /* ncclSystemError */
  assert_string_equal(scenario_get(&s, "allreduce_result"), "2");
  assert_string_equal(scenario_get(&s, "profiling_result"), "2");
  if (strstr(scenario_get(&s, "last_error"), status_text) == NULL)
    fail_msg("last_error lacks \"%s\":\n%s", status_text, s.output);
  assert_non_null(strstr(scenario_get(&s, "last_error"), "no usable NCCL"));
  assert_non_null(strstr(scenario_get(&s, "error_string"), status_text));
}

static void test_no_nccl(void **state) {
  (void)state;
  const char *env[] = {NULL};
  expect_user(env, "libnccl.so.2 was not found; searched: this process");
}

/* The drop-in reached as libnccl.so.2 (a link to it, or a copy) is skipped, not loaded as
 * NCCL, and the reason says so. */
static void test_never_loads_itself(void **state) {
  (void)state;
  Dl_info info;
  assert_true(dladdr((void *)(uintptr_t)&ncclGroupStart, &info));
  char *root = scratch_dir();
  char *linked = join(root, "linked"), *copied = join(root, "copied");
  make_link(info.dli_fname, join(linked, "libnccl.so.2"));
  make_dirs(copied);
  copy_file(info.dli_fname, join(copied, "libnccl.so.2"), (size_t)-1, 0);
  const char *via_link[] = {"LD_LIBRARY_PATH=", NULL};
  const char *via_copy[] = {"LD_LIBRARY_PATH=", NULL};
  char a[4096], b[4096];
  snprintf(a, sizeof(a), "LD_LIBRARY_PATH=%s:%s", linked, getenv("DROPIN_LIBDIR"));
  snprintf(b, sizeof(b), "LD_LIBRARY_PATH=%s:%s", copied, getenv("DROPIN_LIBDIR"));
  via_link[0] = a;
  via_copy[0] = b;
  expect_user(via_link, "ncclshim's drop-in library, not NCCL");
  expect_user(via_copy, "ncclshim's drop-in library, not NCCL");
}

/* The forwarding check again, in a fresh process with the recorder on: the recording
 * wrappers pass every argument and return value through unchanged. */
static void test_forwards_while_recording(void **state) {
  (void)state;
  char *dir = scratch_dir();
  const char *args[] = {"forward", NULL};
  const char *env[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", getenv("NCCLSHIM_NCCL_LIBRARY")),
                       "NCCLSHIM_RECORD=16", env_entry("NCCLSHIM_RECORD_DIR", dir), NULL};
  scenario s;
  run_program(&s, self, args, env);
  if (s.exit_code != 0) fail_msg("%s", s.output);
  /* Every call returned ncclRemoteError: the recorder dumped. */
  assert_int_equal(dump_count(dir), 1);
}

/* In a fresh process (`both`): libncclshim opens an NCCL by a path no search reaches; the
 * drop-in's own loader then finds it mapped and reuses it. */
static int count_fakes(struct dl_phdr_info *info, size_t size, void *count) {
  (void)size;
  if (strstr(info->dlpi_name, "libfake-nccl") != NULL) ++*(int *)count;
  return 0;
}

static int both_in_one_process(const char *path) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = path;
  ncclshim_nccl *nccl = NULL;
  printf("open=%s\n", ncclshim_status_name(ncclshim_nccl_open(&options, &nccl)));
  int version = 0;
  ncclResult_t result = ncclGetVersion(&version); /* the drop-in's first call */
  int mapped = 0;
  dl_iterate_phdr(count_fakes, &mapped);
  printf("dropin_result=%d\ndropin_version=%d\nmapped=%d\n", result, version, mapped);
  return 0;
}

static void test_one_nccl_with_both(void **state) {
  (void)state;
  const char *args[] = {"both", fake_path("2.30.7"), NULL}, *env[] = {NULL};
  scenario s;
  run_program(&s, self, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "open"), "OK");
  assert_string_equal(scenario_get(&s, "dropin_result"), "0");
  assert_string_equal(scenario_get(&s, "dropin_version"), "23007");
  assert_string_equal(scenario_get(&s, "mapped"), "1");
}

int main(int argc, char **argv) {
  self = realpath("/proc/self/exe", NULL);
  const struct CMUnitTest forward[] = {cmocka_unit_test(test_lazy_then_forwards)};
  if (argc == 2 && strcmp(argv[1], "forward") == 0)
    return cmocka_run_group_tests_name("forward", forward, NULL, NULL);
  if (argc == 3 && strcmp(argv[1], "both") == 0) return both_in_one_process(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lazy_then_forwards),
      cmocka_unit_test(test_nccl_calls_itself),
      cmocka_unit_test(test_missing_function_message),
      cmocka_unit_test(test_no_nccl),
      cmocka_unit_test(test_never_loads_itself),
      cmocka_unit_test(test_forwards_while_recording),
      cmocka_unit_test(test_one_nccl_with_both),
  };
  int failed = cmocka_run_group_tests_name("dropin", tests, NULL, NULL);
  return failed | run_interpose_tests() | run_recorder_tests() | run_record_safety_tests() |
         run_record_hang_tests() | run_record_shapes_tests() | run_record_evidence_tests();
}
