/* The search order, each scenario in a fresh process (nccl_scenario) with exactly the
 * environment given and without the machine's ld.so cache, so that "no NCCL" is real even
 * on a machine that has one. */
#include <dlfcn.h>
#include <libgen.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"
#include "ncclshim/status.h"

static char *root;    /* scratch tree */
static char *old_dir; /* holds libnccl.so.2 -> fake 2.21.5 */
static char *bad_dir; /* holds libnccl.so.2 -> fake missing-required */

static int setup(void **state) {
  (void)state;
  root = scratch_dir();
  old_dir = dir_with_link(root, "old", "libnccl.so.2", fake_path("2.21.5"));
  bad_dir = dir_with_link(root, "bad", "libnccl.so.2", fake_path("missing-required"));
  return 0;
}

/* A directory `prefix` + `sub` holding libnccl.so.2 -> the fake `variant`; returns prefix. */
static char *install(const char *name, const char *sub, const char *variant) {
  char *prefix = join(root, name);
  free(dir_with_link(prefix, sub, "libnccl.so.2", fake_path(variant)));
  return prefix;
}

static void expect_chosen(const scenario *s, const char *status, const char *via,
                          const char *version, const char *variant) {
  assert_int_equal(s->exit_code, 0);
  if (strcmp(scenario_get(s, "status"), status) != 0)
    fail_msg("status %s, expected %s; output:\n%s", scenario_get(s, "status"), status, s->output);
  assert_string_equal(scenario_get(s, "via"), via);
  assert_string_equal(scenario_get(s, "version"), version);
  if (variant != NULL) assert_string_equal(scenario_get(s, "path"), fake_path(variant));
}

/* The last search's output, which expect_search and expect_python_chooses hand back. */
static scenario last;

/* One search with `args` and exactly `env`, which must end as expect_chosen says. */
static const scenario *expect_search(const char *const *args, const char *const *env,
                                     const char *status, const char *via, const char *version,
                                     const char *variant) {
  run_scenario(&last, args, env);
  expect_chosen(&last, status, via, version, variant);
  return &last;
}

static void test_no_nccl(void **state) {
  (void)state;
  const char *args[] = {"--call", NULL};
  const char *env[] = {NULL};
  const scenario *s = expect_search(args, env, "NOT_FOUND", "none", "none", NULL);
  assert_string_equal(scenario_attempt(s, "already-loaded|NOT_FOUND|libnccl.so.2"),
                      "already-loaded|NOT_FOUND|libnccl.so.2|not loaded in this process");
  assert_non_null(strstr(scenario_attempt(s, "system-search"), "cannot open shared object file"));
  /* Every step leaves a line in the trail, a step with no candidate its why. */
  assert_non_null(
      strstr(scenario_attempt(s, "library-path|NOT_FOUND"), "LD_LIBRARY_PATH is not set"));
  assert_non_null(
      strstr(scenario_attempt(s, "active-environment|NOT_FOUND"), "no Python environment"));
  assert_non_null(strstr(scenario_attempt(s, "well-known-place|NOT_FOUND"),
                         "NCCL_HOME and CUDA_HOME are unset"));
  assert_non_null(strstr(scenario_get(s, "message"),
                         "libnccl.so.2 was not found; searched: this process (already loaded), "));
  assert_non_null(strstr(scenario_get(s, "message"), "the ld.so cache, the system loader"));
  assert_string_equal(scenario_get(s, "call_result"), "5"); /* ncclInvalidUsage */
  assert_non_null(strstr(scenario_get(s, "call_message"), "ncclAllReduce: no NCCL is loaded"));
  assert_non_null(strstr(scenario_get(s, "error_string"), "invalid usage"));
}

static void test_system_search(void **state) {
  (void)state;
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir), NULL};
  const scenario *s = expect_search(NULL, env, "OK", "library-path", "2.21.5", "2.21.5");
  assert_string_equal(scenario_get(s, "preloaded"), "0");
}

static void test_environment_wins(void **state) {
  (void)state;
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir),
                       env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.9")), NULL};
  const scenario *s = expect_search(NULL, env, "OK", "environment", "2.28.9", "2.28.9");
  assert_string_equal(scenario_get(s, "attempts"), "1");
}

static void test_environment_fails_loud(void **state) {
  (void)state;
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir),
                       env_entry("NCCLSHIM_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"), NULL};
  const scenario *s = expect_search(NULL, env, "NOT_FOUND", "none", "none", NULL);
  assert_string_equal(scenario_get(s, "attempts"), "1");
  assert_non_null(strstr(scenario_get(s, "message"), "/nonexistent/libnccl.so.2"));

  const char *broken[] = {env_entry("LD_LIBRARY_PATH", old_dir),
                          env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("missing-required")), NULL};
  expect_search(NULL, broken, "MISSING_SYMBOLS", "none", "none", NULL);

  const char *relative[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", "libnccl.so.2"), NULL};
  s = expect_search(NULL, relative, "INVALID_ARGUMENT", "none", "none", NULL);
  assert_non_null(strstr(scenario_get(s, "message"), "must be an absolute path"));

  const char *empty[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", ""),
                         env_entry("LD_LIBRARY_PATH", old_dir), NULL};
  expect_search(NULL, empty, "OK", "library-path", "2.21.5", "2.21.5"); /* empty means unset */
}

static void test_api_beats_environment(void **state) {
  (void)state;
  const char *args[] = {"--path", fake_path("2.28.3"), NULL};
  const char *env[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.9")), NULL};
  expect_search(args, env, "OK", "explicit", "2.28.3", "2.28.3");
}

static void test_already_loaded(void **state) {
  (void)state;
  const char *args[] = {"--preload", fake_path("2.27.3"), NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir), NULL};
  const scenario *s = expect_search(args, env, "OK", "already-loaded", "2.27.3", "2.27.3");
  assert_string_equal(scenario_get(s, "preloaded"), "1");
  assert_non_null(strstr(scenario_attempt(s, "already-loaded|OK"), "already loaded from"));
}

static void test_keeps_searching_past_old(void **state) {
  (void)state;
  char *home = install("home", "lib", "2.28.9");
  const char *args[] = {"--min", "22800", NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir), env_entry("NCCL_HOME", home), NULL};
  const scenario *s = expect_search(args, env, "OK", "well-known-place", "2.28.9", "2.28.9");
  assert_non_null(strstr(scenario_attempt(s, "library-path|VERSION_TOO_OLD"),
                         "NCCL 2.21.5 is older than the 2.28.0"));

  /* And past a broken one. */
  const char *broken[] = {env_entry("LD_LIBRARY_PATH", bad_dir), env_entry("NCCL_HOME", home),
                          NULL};
  s = expect_search(NULL, broken, "OK", "well-known-place", "2.28.9", "2.28.9");
  assert_non_null(strstr(scenario_attempt(s, "MISSING_SYMBOLS"), "ncclAllReduce"));
}

static void test_all_refused(void **state) {
  (void)state;
  const char *args[] = {"--min", "22800", "--call", NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", old_dir), NULL};
  const scenario *s = expect_search(args, env, "VERSION_TOO_OLD", "none", "none", NULL);
  assert_non_null(strstr(scenario_get(s, "message"), "older than the 2.28.0"));
  assert_non_null(strstr(scenario_get(s, "call_message"), "older than the 2.28.0"));
}

static void test_well_known_places(void **state) {
  (void)state;
  char *conda = install("conda", "lib", "2.27.3");
  const char *e1[] = {env_entry("CONDA_PREFIX", conda), NULL};
  expect_search(NULL, e1, "OK", "active-environment", "2.27.3", "2.27.3");

  char *cuda = install("cuda", "lib64", "2.28.3");
  const char *e2[] = {env_entry("CUDA_HOME", cuda), NULL};
  expect_search(NULL, e2, "OK", "well-known-place", "2.28.3", "2.28.3");

  char *venv = install("venv", "lib/python3.12/site-packages/nvidia/nccl/lib", "2.30.7");
  const char *e3[] = {env_entry("VIRTUAL_ENV", venv), NULL};
  expect_search(NULL, e3, "OK", "active-environment", "2.30.7", "2.30.7");

  /* The active environment (CONDA_PREFIX) comes before NCCL_HOME, a well-known place. */
  char *home = install("home2", "lib", "2.21.5");
  const char *e4[] = {env_entry("CONDA_PREFIX", conda), env_entry("NCCL_HOME", home), NULL};
  expect_search(NULL, e4, "OK", "active-environment", "2.27.3", "2.27.3");
  const char *e4b[] = {env_entry("NCCL_HOME", home), NULL};
  expect_search(NULL, e4b, "OK", "well-known-place", "2.21.5", "2.21.5");

  /* A relative directory is never searched. */
  const char *e5[] = {env_entry("NCCL_HOME", "home2"), NULL};
  const scenario *s = expect_search(NULL, e5, "NOT_FOUND", "none", "none", NULL);
  assert_string_equal(scenario_attempt(s, "home2"), "");
}

/* LD_LIBRARY_PATH=<libncclshim's directory>: a symlink to the scenario helper started through
 * ld.so gets no $ORIGIN of the helper's own directory. */
static const char *library_dir(void) {
  Dl_info info;
  if (dladdr((void *)ncclshim_status_name, &info) == 0 || info.dli_fname == NULL)
    fail_msg("where is libncclshim?");
  char *copy = strdup(info.dli_fname);
  char *entry = env_entry("LD_LIBRARY_PATH", dirname(copy));
  free(copy);
  return entry;
}

/* The scenario helper started as `prefix`/bin/python3, as a program of that environment,
 * must choose `version` from the active environment. In a venv (pyvenv.cfg) the program is a
 * symlink to the base interpreter, as venv makes it; elsewhere it is the interpreter's own
 * file (Python follows a symlink outside a venv to the prefix it leads to). */
static const scenario *expect_python_chooses(const char *prefix, const char *version, int venv) {
  char *program = join(prefix, "bin/python3");
  if (venv) {
    char *cfg = join(prefix, "pyvenv.cfg");
    FILE *f = fopen(cfg, "w");
    if (f == NULL || fputs("home = /usr/bin\n", f) < 0 || fclose(f) != 0) fail_msg("%s", cfg);
    free(cfg);
    make_link(getenv("SCENARIO"), program);
  } else {
    char *bin = join(prefix, "bin");
    make_dirs(bin);
    free(bin);
    unlink(program);
    copy_file(getenv("SCENARIO"), program, (size_t)-1, 0);
  }
  const char *env[] = {library_dir(), NULL};
  run_program(&last, program, NULL, env);
  expect_chosen(&last, "OK", "active-environment", version, NULL);
  free(program);
  return &last;
}

/* A venv used without activating it (no VIRTUAL_ENV), as services and IDEs do: its
 * bin/python3 is a symlink to the base interpreter, so only the path the program was started
 * by leads to the venv's wheel. */
static void test_unactivated_venv(void **state) {
  (void)state;
  char *venv = install("plainvenv", "lib/python3.12/site-packages/nvidia/nccl/lib", "2.28.9");
  const scenario *s = expect_python_chooses(venv, "2.28.9", 1);
  assert_non_null(strstr(scenario_attempt(s, "/plainvenv/lib/python3.12/site-packages/"), "|OK|"));
  /* Started by its real file instead, nothing leads there. */
  s = expect_search(NULL, NULL, "NOT_FOUND", "none", "none", NULL);
  assert_string_equal(scenario_attempt(s, "plainvenv"), "");
}

/* pip --user: ~/.local/lib/python3.N/site-packages, after the program's own environment. */
static void test_user_site(void **state) {
  (void)state;
  char *home = install("userhome", ".local/lib/python3.11/site-packages/nvidia/nccl/lib", "2.27.3");
  const char *env[] = {env_entry("HOME", home), NULL};
  const scenario *s = expect_search(NULL, env, "OK", "active-environment", "2.27.3", NULL);
  assert_non_null(strstr(scenario_attempt(s, "/userhome/.local/lib/python3.11/"), "|OK|"));
  /* PYTHONUSERBASE replaces ~/.local, as in Python. */
  char *base = install("userbase", "lib/python3.13/site-packages/nvidia/nccl/lib", "2.21.5");
  const char *env2[] = {env_entry("HOME", home), env_entry("PYTHONUSERBASE", base), NULL};
  expect_search(NULL, env2, "OK", "active-environment", "2.21.5", NULL);
  /* An activated venv comes first. */
  char *venv = install("venv2", "lib/python3.12/site-packages/nvidia/nccl/lib", "2.30.7");
  const char *env3[] = {env_entry("HOME", home), env_entry("VIRTUAL_ENV", venv), NULL};
  expect_search(NULL, env3, "OK", "active-environment", "2.30.7", "2.30.7");
}

/* Debian's dist-packages under the program's prefix, after its site-packages. */
static void test_dist_packages(void **state) {
  (void)state;
  char *prefix = install("debian", "lib/python3/dist-packages/nvidia/nccl/lib", "2.21.5");
  const scenario *s = expect_python_chooses(prefix, "2.21.5", 0);
  assert_non_null(strstr(scenario_attempt(s, "/debian/lib/python3/dist-packages/"), "|OK|"));
  install("debian", "lib/python3.12/dist-packages/nvidia/nccl/lib", "2.27.3");
  expect_python_chooses(prefix, "2.27.3", 0);
  install("debian", "lib/python3.12/site-packages/nvidia/nccl/lib", "2.28.9");
  expect_python_chooses(prefix, "2.28.9", 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_nccl),
      cmocka_unit_test(test_system_search),
      cmocka_unit_test(test_environment_wins),
      cmocka_unit_test(test_environment_fails_loud),
      cmocka_unit_test(test_api_beats_environment),
      cmocka_unit_test(test_already_loaded),
      cmocka_unit_test(test_keeps_searching_past_old),
      cmocka_unit_test(test_all_refused),
      cmocka_unit_test(test_unactivated_venv),
      cmocka_unit_test(test_user_site),
      cmocka_unit_test(test_dist_packages),
      cmocka_unit_test(test_well_known_places),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
