/* The loader tells the truth: each case in a fresh process (nccl_scenario), with
 * exactly the environment given and the machine's own NCCL hidden.
 *  1. a library that only links NCCL is reported as the NCCL behind it;
 *  2. ncclGetVersion exported as a variable or thread-local is NOT_NCCL, never called;
 *  3. a second NCCL in the process is counted and warned about, or refused when asked
 *     (the same file twice, a different file, NCCL linked into the program);
 *  4. an explicit path already mapped reports preloaded;
 *  5. every python3.* folder of a virtual environment, newest first;
 *  9. a refused copy first on LD_LIBRARY_PATH no longer hides the ld.so cache's NCCL, and
 *     every file the cache registers is tried;
 * 10. the active environment comes before the ld.so cache;
 * 12. the fingerprint comes from the build-id, a bounded sample of the file without one;
 * 13. "(already-loaded, already loaded)", and a min_version beyond any 2.x. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"

static char *root;

static int setup(void **state) {
  (void)state;
  root = scratch_dir();
  return 0;
}

static void expect_status(const scenario *s, const char *status) {
  if (s->exit_code != 0 || strcmp(scenario_get(s, "status"), status) != 0)
    fail_msg("exit %d, status %s, expected %s; output:\n%s", s->exit_code,
             scenario_get(s, "status"), status, s->output);
}

static void expect_in(const scenario *s, const char *key, const char *needle) {
  if (strstr(scenario_get(s, key), needle) == NULL)
    fail_msg("%s lacks \"%s\"; output:\n%s", key, needle, s->output);
}

/* The last search's output, which search and search_in hand back. */
static scenario last;

/* One search by `program` (NULL: the scenario helper) with `args` and exactly `env`, which
 * must end with exit 0 and `status`. */
static const scenario *search_in(const char *program, const char *const *args,
                                 const char *const *env, const char *status) {
  if (program != NULL)
    run_program(&last, program, args, env);
  else
    run_scenario(&last, args, env);
  expect_status(&last, status);
  return &last;
}
static const scenario *search(const char *const *args, const char *const *env, const char *status) {
  return search_in(NULL, args, env, status);
}

/* An explicit open of `path` (--path) with an empty environment, which must end in `status`. */
static const scenario *open_path(const char *path, const char *status) {
  const char *args[] = {"--path", path, NULL};
  return search(args, NULL, status);
}

/* The attempt or census line whose text contains `needle`, "" if none. */
static const char *find_line(const scenario *s, const char *kind, const char *needle) {
  char key[64];
  snprintf(key, sizeof(key), "%ss", kind);
  int count = atoi(scenario_get(s, strcmp(kind, "attempt") == 0 ? "attempts" : kind));
  for (int i = 0; i < count; i++) {
    snprintf(key, sizeof(key), "%s.%d", kind, i);
    const char *line = scenario_get(s, key);
    if (strstr(line, needle) != NULL) return line;
  }
  return "";
}

/* <root>/<name>/libwrapper-nccl.so beside <root>/<name>/libnccl.so.2 -> the fake `variant`. */
static char *wrapper_beside(const char *name, const char *variant) {
  char *dir = join(root, name);
  make_link(fake_path(variant), join(dir, "libnccl.so.2"));
  char *wrapper = join(dir, "libwrapper-nccl.so");
  copy_file(getenv("WRAPPER_NCCL"), wrapper, (size_t)-1, 0);
  return wrapper;
}

static void test_wrapper_reports_the_real_nccl(void **state) {
  (void)state;
  char *a = wrapper_beside("wrap-a", "2.28.3"), *b = wrapper_beside("wrap-b", "2.28.9");
  const scenario *s = open_path(a, "OK");
  EXPECT_VALUES(s, "version", "2.28.3");
  /* The path is the NCCL that defines the functions, not the wrapper... */
  EXPECT_VALUES(s, "path", fake_path("2.28.3"));
  /* ...which the trail and the message name. */
  expect_in(s, "attempt.0", "only links NCCL: its functions are defined in");
  expect_in(s, "attempt.0", a);
  expect_in(s, "message", "through ");
  char *fingerprint_a = strdup(scenario_get(s, "fingerprint"));
  s = open_path(b, "OK");
  EXPECT_VALUES(s, "path", fake_path("2.28.9"));
  /* Two NCCLs behind two wrappers: two fingerprints. */
  assert_string_not_equal(fingerprint_a, scenario_get(s, "fingerprint"));
  free(fingerprint_a);
}

static void test_get_version_not_a_function(void **state) {
  (void)state;
  const scenario *s =
      open_path(getenv("DATA_GET_VERSION"), "NOT_NCCL"); /* and no SIGSEGV: exit 0 */
  expect_in(s, "message", "ncclGetVersion is a variable, not a function");
  s = open_path(getenv("TLS_GET_VERSION"), "NOT_NCCL");
  expect_in(s, "message", "thread-local");
}

static void test_same_file_twice(void **state) {
  (void)state;
  const char *args[] = {"--preload",         fake_path("2.28.9"), "--path",
                        fake_path("2.28.9"), "--refuse",          NULL};
  const char *env[] = {NULL};
  const scenario *s = search(args, env, "OK");
  EXPECT_VALUES(s, "via", "explicit", "preloaded", "1", "census", "1"); /* preloaded: item 4 */
  assert_null(strstr(scenario_get(s, "message"), "WARNING"));
}

static void test_different_file(void **state) {
  (void)state;
  const char *env[] = {NULL};
  const char *args[] = {"--preload", fake_path("2.28.9"), "--path", fake_path("2.28.3"), NULL};
  const scenario *s = search(args, env, "OK"); /* by default: mapped, with a warning */
  EXPECT_VALUES(s, "census", "2");
  expect_in(s, "message", "WARNING: 2 NCCLs are mapped in this process");
  expect_in(s, "message", fake_path("2.28.9"));
  assert_non_null(strstr(find_line(s, "census", "|0|1|"), fake_path("2.28.3")));

  /* Refused when asked, and never mapped. */
  const char *refuse[] = {
      "--preload", fake_path("2.28.9"), "--path", fake_path("2.28.3"), "--refuse",
      "--mapped",  fake_path("2.28.3"), NULL};
  s = search(refuse, env, "SECOND_COPY");
  expect_in(s, "message", "another NCCL is mapped in this process (2.28.9 at");
  EXPECT_VALUES(s, "mapped", "0");

  /* The drop-in's way: the default handle, NCCLSHIM_NCCL_LIBRARY and the variable. */
  const char *preload[] = {"--preload", fake_path("2.28.9"), NULL};
  const char *refuse_env[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.3")),
                              "NCCLSHIM_REFUSE_SECOND_NCCL=1", NULL};
  search(preload, refuse_env, "SECOND_COPY");
  const char *warn_env[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.3")), NULL};
  s = search(preload, warn_env, "OK");
  EXPECT_VALUES(s, "census", "2");
}

static void test_static_in_program(void **state) {
  (void)state;
  const char *env[] = {NULL};
  const char *program = getenv("SCENARIO_STATIC");
  /* The default search reuses the program's own NCCL. */
  const scenario *s = search_in(program, NULL, env, "OK");
  EXPECT_VALUES(s, "via", "already-loaded", "version", "2.27.3", "census", "1");
  assert_non_null(strstr(scenario_get(s, "census.0"), "2.27.3|1|1|"));

  const char *args[] = {"--path", fake_path("2.28.9"), NULL};
  s = search_in(program, args, env, "OK");
  EXPECT_VALUES(s, "census", "2");
  expect_in(s, "message", "(linked into the program)");
  const char *refuse[] = {"--path", fake_path("2.28.9"), "--refuse", NULL};
  s = search_in(program, refuse, env, "SECOND_COPY");
  expect_in(s, "message", "linked into the program");
}

/* A cache made by the system's ldconfig from `dirs`, or NULL without an ldconfig of this
 * test's architecture (another one's registers none of these libraries). */
static char *make_cache(const char *name, const char *dir1, const char *dir2) {
  const char *ldconfig = access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig" : NULL;
  if (ldconfig == NULL) return NULL;
  if (elf_machine(ldconfig) != own_machine()) {
    printf("# %s is for %s", ldconfig, machine_name(elf_machine(ldconfig)));
    printf(", this test for %s: skipped\n", machine_name(own_machine()));
    return NULL;
  }
  char *cache = join(root, name);
  char command[8192];
  snprintf(command, sizeof(command), "%s -C '%s' -f /dev/null -X '%s' '%s'", ldconfig, cache, dir1,
           dir2 ? dir2 : dir1);
  return system(command) == 0 ? cache : NULL;
}

static void test_cache_past_a_refused_copy(void **state) {
  (void)state;
  char *lp = join(root, "lp"), *old = join(root, "cache-old"), *good = join(root, "cache-good");
  make_dirs(lp);
  copy_file(getenv("DROPIN_LIB"), join(lp, "libnccl.so.2"), (size_t)-1, 0);
  make_dirs(old);
  copy_file(fake_path("2.21.5"), join(old, "libnccl.so.2"), (size_t)-1, 0);
  make_dirs(good);
  copy_file(fake_path("2.28.9"), join(good, "libnccl.so.2"), (size_t)-1, 0);
  char *cache = make_cache("two.cache", old, good);
  if (cache == NULL) skip();
  const char *args[] = {"--min", "22800", NULL};
  const char *env[] = {env_entry("LD_LIBRARY_PATH", lp), env_entry("NCCLSHIM_LD_CACHE", cache),
                       NULL};
  const scenario *s = search(args, env, "OK");
  EXPECT_VALUES(s, "via", "ld-cache", "path", join(good, "libnccl.so.2"));
  assert_non_null(strstr(find_line(s, "attempt", "library-path|NOT_NCCL"), "drop-in"));
  assert_non_null(strstr(find_line(s, "attempt", "ld-cache|VERSION_TOO_OLD"), old));
}

static void test_environment_before_cache(void **state) {
  (void)state;
  char *cached = join(root, "cached");
  make_dirs(cached);
  copy_file(fake_path("2.28.9"), join(cached, "libnccl.so.2"), (size_t)-1, 0);
  char *cache = make_cache("one.cache", cached, NULL);
  if (cache == NULL) skip();
  char *venv = join(root, "venv10");
  make_link(fake_path("2.30.7"),
            join(venv, "lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  const char *args[] = {"--list", NULL};
  const char *env[] = {env_entry("VIRTUAL_ENV", venv), env_entry("NCCLSHIM_LD_CACHE", cache), NULL};
  const scenario *s = search(args, env, "OK");
  EXPECT_VALUES(s, "via", "active-environment", "version", "2.30.7");
  /* Every NCCL visible: the chosen one, mapped, and the cache's, not loaded. */
  EXPECT_VALUES(s, "list_status", "OK");
  /* The chosen one is named by the step that found it, as "via". */
  assert_non_null(
      strstr(find_line(s, "visible", fake_path("2.30.7")), "active-environment|2.30.7|1|1|"));
  assert_non_null(strstr(find_line(s, "visible", cached), "ld-cache|none|0|0|"));

  const char *no_venv[] = {env_entry("NCCLSHIM_LD_CACHE", cache), NULL};
  s = search(args, no_venv, "OK");
  EXPECT_VALUES(s, "via", "ld-cache");
  assert_non_null(strstr(find_line(s, "visible", cached), "ld-cache|2.28.9|1|1|"));
}

static void test_every_wheel_folder_newest_first(void **state) {
  (void)state;
  char *venv = join(root, "venv5");
  char sub[128];
  for (int n = 1; n <= 20; n++) {
    snprintf(sub, sizeof(sub), "lib/python3.%d/site-packages/nvidia/nccl/lib", n);
    make_dirs(join(venv, sub));
  }
  /* Only one folder of twenty holds NCCL (the search looked at 16, in directory order). */
  make_link(fake_path("2.27.3"),
            join(venv, "lib/python3.5/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  const char *env[] = {env_entry("VIRTUAL_ENV", venv), NULL};
  const scenario *s = search(NULL, env, "OK");
  EXPECT_VALUES(s, "version", "2.27.3");
  /* Two: the newest Python's wins (3.20 before 3.9, by version, not by name). */
  make_link(fake_path("2.21.5"),
            join(venv, "lib/python3.9/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  make_link(fake_path("2.30.7"),
            join(venv, "lib/python3.20/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  s = search(NULL, env, "OK");
  EXPECT_VALUES(s, "version", "2.30.7");
}

static void test_fingerprint_from_build_id(void **state) {
  (void)state;
  const scenario *s = open_path(fake_path("2.28.9"), "OK");
  expect_in(s, "fingerprint", "nccl2.28.9-b");
  expect_in(s, "fingerprint", "-s");
  s = open_path(getenv("FAKE_NO_BUILD_ID"), "OK");
  expect_in(s, "fingerprint", "nccl2.28.9-q");
}

/* Without a build-id the fingerprint reads a bounded sample, whatever the size: a
 * 4 GiB sparse copy must not be read whole (an mmap of it faults a million pages in). */
static void test_fingerprint_without_build_id_is_bounded(void **state) {
  (void)state;
  char *big = join(root, "sparse/libnccl.so.2");
  make_dirs(join(root, "sparse"));
  copy_file(getenv("FAKE_NO_BUILD_ID"), big, (size_t)-1, 0);
  assert_int_equal(truncate(big, 4LL << 30), 0);
  const scenario *s = open_path(big, "OK");
  expect_in(s, "fingerprint", "nccl2.28.9-q");
  long faults = atol(scenario_get(s, "fingerprint_faults"));
  if (faults > 4096) fail_msg("the fingerprint faulted %ld pages in", faults);
  unlink(big);
}

static void test_small_items(void **state) {
  (void)state;
  const char *env[] = {NULL};
  const char *preload[] = {"--preload", fake_path("2.28.9"), NULL};
  const scenario *s = search(preload, env, "OK");
  expect_in(s, "message", "(already-loaded)");
  char max[32];
  snprintf(max, sizeof(max), "%d", INT_MAX);
  const char *too_high[] = {"--path", fake_path("2.28.9"), "--min", max, NULL};
  s = search(too_high, env, "VERSION_TOO_OLD");
  expect_in(s, "message", "older than min_version 2147483647, which no NCCL 2.x meets");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wrapper_reports_the_real_nccl),
      cmocka_unit_test(test_get_version_not_a_function),
      cmocka_unit_test(test_same_file_twice),
      cmocka_unit_test(test_different_file),
      cmocka_unit_test(test_static_in_program),
      cmocka_unit_test(test_cache_past_a_refused_copy),
      cmocka_unit_test(test_environment_before_cache),
      cmocka_unit_test(test_every_wheel_folder_newest_first),
      cmocka_unit_test(test_fingerprint_from_build_id),
      cmocka_unit_test(test_fingerprint_without_build_id_is_bounded),
      cmocka_unit_test(test_small_items),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
