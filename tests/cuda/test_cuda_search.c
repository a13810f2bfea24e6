/* The driver search, each scenario in a fresh process (cuda_scenario) with exactly the
 * environment given and without the ld.so cache: NCCLSHIM_CUDA_LIBRARY (fail-loud), reuse of a
 * driver already mapped, the SONAME only, and a stubs/ directory on the search path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"
#include "cuda_fakes.h"

static char *root;      /* scratch tree */
static char *good_dir;  /* libcuda.so.1 -> fake 13.0 */
static char *dev_dir;   /* only libcuda.so (the unversioned name) -> fake 13.0 */
static char *stubs_dir; /* .../stubs/libcuda.so.1: a copy of fake 13.0 */

static int setup(void **state) {
  (void)state;
  root = scratch_dir();
  good_dir = dir_with_link(root, "good", "libcuda.so.1", cuda_fake_path("13.0"));
  dev_dir = dir_with_link(root, "dev", "libcuda.so", cuda_fake_path("13.0"));
  stubs_dir = join(root, "cuda/lib64/stubs");
  make_dirs(stubs_dir);
  copy_file(cuda_fake_path("13.0"), join(stubs_dir, "libcuda.so.1"), (size_t)-1, 0);
  return 0;
}

static void expect(const scenario *s, const char *status, const char *via) {
  assert_int_equal(s->exit_code, 0);
  if (strcmp(scenario_get(s, "status"), status) != 0 || strcmp(scenario_get(s, "via"), via) != 0)
    fail_msg("expected %s via %s; output:\n%s", status, via, s->output);
}

/* One search with `args` and exactly `env`, which must end in `status` via `via`; its output,
 * kept until the next search. */
static const scenario *search(const char *const *args, const char *const *env, const char *status,
                              const char *via) {
  static scenario s;
  run_scenario(&s, args, env);
  expect(&s, status, via);
  return &s;
}

/* A real driver that the system search found anyway (the ld.so default directories of a GPU
 * host are searched even without the cache): the scenario proves nothing there. */
static int found_real_driver(const scenario *s) {
  return strcmp(scenario_get(s, "status"), "OK") == 0 &&
         strncmp(scenario_get(s, "path"), getenv("CUDA_FAKE_DIR"),
                 strlen(getenv("CUDA_FAKE_DIR"))) != 0;
}

static void test_environment_variable(void **state) {
  (void)state;
  const char *env[] = {env_entry("NCCLSHIM_CUDA_LIBRARY", cuda_fake_path("12.2")), NULL};
  const scenario *s = search(NULL, env, "OK", "environment");
  EXPECT_VALUES(s, "path", cuda_fake_path("12.2"), "driver", "12020", "same_default", "1");
}

/* A path in the variable is used alone: unusable means failure, not the next place. */
static void test_environment_variable_fails_loudly(void **state) {
  (void)state;
  const char *missing[] = {"NCCLSHIM_CUDA_LIBRARY=/nonexistent/libcuda.so.1",
                           env_entry("LD_LIBRARY_PATH", good_dir), NULL};
  const scenario *s = search(NULL, missing, "NOT_FOUND", "none");
  assert_string_equal(scenario_get(s, "attempts"), "1");
  assert_non_null(strstr(scenario_get(s, "message"), "/nonexistent/libcuda.so.1"));

  const char *stub[] = {env_entry("NCCLSHIM_CUDA_LIBRARY", cuda_fake_path("stub")),
                        env_entry("LD_LIBRARY_PATH", good_dir), NULL};
  s = search(NULL, stub, "DRIVER_UNAVAILABLE", "none");
  EXPECT_VALUES(s, "stub", "1", "attempts", "1");

  const char *relative[] = {"NCCLSHIM_CUDA_LIBRARY=libcuda.so.1", NULL};
  s = search(NULL, relative, "INVALID_ARGUMENT", "none");
  assert_non_null(strstr(scenario_get(s, "message"), "must be an absolute path"));
}

/* A driver already mapped in the process is reused, ahead of the system search. */
static void test_already_loaded(void **state) {
  (void)state;
  const char *args[] = {"--preload", cuda_fake_path("12.2"), NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", good_dir), NULL};
  const scenario *s = search(args, env, "OK", "already-loaded");
  EXPECT_VALUES(s, "preloaded", "1", "path", cuda_fake_path("12.2"), "driver", "12020");
}

static void test_system_search(void **state) {
  (void)state;
  const char *args[] = {"--init", NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", good_dir), NULL};
  const scenario *s = search(args, env, "OK", "system-search");
  EXPECT_VALUES(s, "path", cuda_fake_path("13.0"), "preloaded", "0", "init", "OK");
}

/* libcuda.so (the toolkit's and dev packages' name, where the stub hides) is never tried. */
static void test_unversioned_name_never_tried(void **state) {
  (void)state;
  scenario s;
  const char *env[] = {env_entry("LD_LIBRARY_PATH", dev_dir), NULL};
  run_scenario(&s, NULL, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_not_equal(scenario_get(&s, "path"), cuda_fake_path("13.0"));
  assert_string_equal(scenario_attempt(&s, "|libcuda.so|"), "");
}

/* A stubs/ directory on the search path: refused as the stub, with the file named. */
static void test_stubs_directory(void **state) {
  (void)state;
  const char *args[] = {"--call", NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", stubs_dir), NULL};
  const scenario *s = search(args, env, "DRIVER_UNAVAILABLE", "none");
  EXPECT_VALUES(s, "stub", "1", "call_result", "3");
  assert_non_null(strstr(scenario_get(s, "message"), "/cuda/lib64/stubs/libcuda.so.1"));
  assert_non_null(strstr(scenario_get(s, "message"), "stub library"));
  assert_non_null(strstr(scenario_get(s, "call_message"), "cuInit: no CUDA driver is loaded"));
}

static void test_no_driver(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"--init", "--call", NULL};
  run_scenario(&s, args, NULL);
  if (found_real_driver(&s)) skip();
  expect(&s, "NOT_FOUND", "none");
  assert_non_null(strstr(scenario_get(&s, "message"), "libcuda.so.1 was not found"));
  EXPECT_VALUES(&s, "init", "DRIVER_UNAVAILABLE", "call_result", "3");
  assert_non_null(strstr(scenario_get(&s, "call_message"), "libcuda.so.1 was not found"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_environment_variable),
      cmocka_unit_test(test_environment_variable_fails_loudly),
      cmocka_unit_test(test_already_loaded),
      cmocka_unit_test(test_system_search),
      cmocka_unit_test(test_unversioned_name_never_tried),
      cmocka_unit_test(test_stubs_directory),
      cmocka_unit_test(test_no_driver),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
