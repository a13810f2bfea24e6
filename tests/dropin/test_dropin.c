/* The drop-in library: NCCL's plain names and pnccl aliases forward every argument to the
 * loaded NCCL; loading waits for the first call; NCCL's calls to its own names come back
 * through the drop-in exactly once; with no NCCL or only the drop-in itself on the search
 * path, calls fail cleanly and say what was searched. */
#include <dlfcn.h>
#include <stdlib.h>

#define NCCLSHIM_DECLARE_DEVICE_API /* the device API's names, as the drop-in exports them */
#include "../forward_check.h"

#define FORWARD_TAG plain_
#define FORWARD_CALLEE(name) name
FORWARD_DEFINE
#undef FORWARD_TAG
#undef FORWARD_CALLEE
#define FORWARD_TAG profiling_
#define FORWARD_CALLEE(name) p##name
FORWARD_DEFINE

static char *fake;

static void test_lazy_then_forwards(void **state) {
  (void)state;
  fake = getenv("NCCLSHIM_NCCL_LIBRARY");
  assert_non_null(fake);
  /* Nothing was loaded when the program started. */
  assert_null(dlopen(fake, RTLD_NOW | RTLD_NOLOAD));
  int version = 0;
  assert_int_equal(ncclGetVersion(&version), ncclSuccess);
  assert_int_equal(version, 22809);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lazy_then_forwards),
      cmocka_unit_test(test_nccl_calls_itself),
      cmocka_unit_test(test_no_nccl),
      cmocka_unit_test(test_never_loads_itself),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
