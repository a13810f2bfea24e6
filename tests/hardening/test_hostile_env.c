/* Hostile values in the variables ncclshim reads, each in a fresh process (the hardening
 * helper, under ld.so --inhibit-cache with the audit module that hides the machine's own NCCL
 * and libcuda): hostile files named by NCCLSHIM_NCCL_LIBRARY / NCCLSHIM_CUDA_LIBRARY, empty
 * and relative variables, and hostile files in the well-known places, past which the search
 * goes on. */
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

static char *root;
static char *helper;
static char *dir_path, *loop_path, *long_path, *fifo_path, *zero_path, *text_path;
static char *odd_nccl, *odd_cuda; /* good libraries under a name that is not UTF-8 */

static int setup(void **state) {
  (void)state;
  root = scratch_dir();
  dir_path = join(root, "a-directory");
  make_dirs(dir_path);
  loop_path = join(root, "loop");
  make_link(loop_path, loop_path);
  long_path = hs_long_path(10000);
  fifo_path = join(root, "fifo");
  mkfifo(fifo_path, 0644);
  zero_path = join(root, "zero.so");
  hs_write(zero_path, "", 0);
  text_path = join(root, "text.so");
  hs_write(text_path, "INPUT(libnccl.so.2)\n", 20);
  char *odd = join(root, "\xff\xfe-\xc3\x28");
  make_dirs(odd);
  odd_nccl = join(odd, "libnccl.so.2");
  copy_file(fake_path("2.28.9"), odd_nccl, (size_t)-1, 0);
  odd_cuda = join(odd, "libcuda.so.1");
  copy_file(getenv("CUDA_FAKE"), odd_cuda, (size_t)-1, 0);
  return 0;
}

static void run(scenario *s, const char *const *env) {
  run_program(s, helper, NULL, env);
  if (s->exit_code != 0 || strcmp(scenario_get(s, "end"), "1") != 0)
    fail_msg("the helper failed (exit %d):\n%s", s->exit_code, s->output);
}

static void expect(const scenario *s, const char *who, const char *status, const char *reason) {
  char key[64];
  snprintf(key, sizeof(key), "%s.status", who);
  if (strcmp(scenario_get(s, key), status) != 0)
    fail_msg("%s, expected %s:\n%s", key, status, s->output);
  snprintf(key, sizeof(key), "%s.message", who);
  if (strstr(scenario_get(s, key), reason) == NULL)
    fail_msg("%s lacks \"%s\":\n%s", key, reason, s->output);
}

typedef struct env_case {
  const char *value;                     /* NULL: skipped */
  const char *nccl_status, *nccl_reason; /* NULL: not tried for NCCL */
  const char *cuda_status, *cuda_reason; /* NULL: not tried for CUDA */
} env_case;

/* NCCLSHIM_*_LIBRARY naming a hostile file: that file alone, its reason, no fallback. */
static void test_override_variables(void **state) {
  (void)state;
  const char *foreign = getenv("FOREIGN_LIB");
  if (foreign != NULL && foreign[0] == '\0') foreign = NULL; /* no cross compiler */
  const char *loop = "Too many levels of symbolic links", *odd = "\xff\xfe-\xc3\x28";
  const env_case cases[] = {
      {dir_path, "LOAD_FAILED", "is a directory", "LOAD_FAILED", "is a directory"},
      {loop_path, "LOAD_FAILED", loop, "LOAD_FAILED", loop},
      /* a name no file can have: NOT_FOUND, since LOAD_FAILED means "a file exists" */
      {long_path, "NOT_FOUND", "too long to name a file", "NOT_FOUND", "too long to name a file"},
      {fifo_path, "LOAD_FAILED", "is not a regular file", "LOAD_FAILED", "is not a regular file"},
      {"/dev/null", "LOAD_FAILED", "is not a regular file", "LOAD_FAILED", "is not a regular file"},
      {zero_path, "LOAD_FAILED", "empty file", "LOAD_FAILED", "empty file"},
      {text_path, "LOAD_FAILED", "not an ELF file", "LOAD_FAILED", "not an ELF file"},
      {fake_path("version-silent"), "BAD_VERSION", "ncclGetVersion succeeded but wrote no version",
       NULL, NULL},
      {foreign, "LOAD_FAILED", "ELF for machine type", "LOAD_FAILED", "ELF for machine type"},
      {odd_nccl, "OK", odd, NULL, NULL},
      {odd_cuda, NULL, NULL, "OK", odd},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const env_case *c = &cases[i];
    if (c->value == NULL) continue;
    scenario s;
    if (c->nccl_status != NULL) {
      const char *env[] = {env_entry("NCCLSHIM_NCCL_LIBRARY", c->value), NULL};
      run(&s, env);
      expect(&s, "nccl", c->nccl_status, c->nccl_reason);
      assert_string_equal(scenario_get(&s, "nccl.attempts"), "1");
      assert_non_null(strstr(scenario_get(&s, "nccl.attempt.0"), "environment|"));
      if (strcmp(c->nccl_status, "OK") != 0)
        assert_string_equal(scenario_get(&s, "nccl.call_result"), "5"); /* ncclInvalidUsage */
    }
    if (c->cuda_status != NULL) {
      const char *env[] = {env_entry("NCCLSHIM_CUDA_LIBRARY", c->value), NULL};
      run(&s, env);
      expect(&s, "cuda", c->cuda_status, c->cuda_reason);
      assert_string_equal(scenario_get(&s, "cuda.attempts"), "1");
    }
  }
}

/* An empty variable counts as unset: the plain search, and no debug trail. */
static void test_empty_variables(void **state) {
  (void)state;
  scenario s;
  const char *env[] = {"NCCLSHIM_NCCL_LIBRARY=",
                       "NCCLSHIM_CUDA_LIBRARY=",
                       "NCCLSHIM_DEBUG=",
                       "NCCL_HOME=",
                       "CONDA_PREFIX=",
                       "CUDA_HOME=",
                       "VIRTUAL_ENV=",
                       "LD_LIBRARY_PATH=",
                       NULL};
  run(&s, env);
  expect(&s, "nccl", "NOT_FOUND", "libnccl.so.2 was not found");
  expect(&s, "cuda", "NOT_FOUND", "libcuda.so.1 was not found");
  /* Empty variables name no place: the directory steps leave only their notes. */
  assert_non_null(strstr(hs_attempt(&s, "nccl", "environment"), "no Python environment"));
  assert_string_equal(hs_attempt(&s, "cuda", "environment"), "");
  assert_non_null(
      strstr(hs_attempt(&s, "nccl", "well-known-place"), "NCCL_HOME and CUDA_HOME are unset"));
  assert_int_equal(hs_count_lines(&s, "ncclshim"), 0);

  /* The same check sees the trail when debugging is on ("0" is off). */
  const char *off[] = {"NCCLSHIM_DEBUG=0", NULL};
  run(&s, off);
  assert_int_equal(hs_count_lines(&s, "ncclshim"), 0);
  const char *on[] = {"NCCLSHIM_DEBUG=1", NULL};
  run(&s, on);
  assert_true(hs_count_lines(&s, "ncclshim: ") >= 2);
  assert_true(hs_count_lines(&s, "ncclshim cuda: ") >= 2);
}

/* A relative path in a variable (documented): the overrides refuse it with
 * INVALID_ARGUMENT; the well-known-place variables ignore it. Nothing is taken from the
 * current directory, although it holds every name the searches look for. */
static void test_relative_variables(void **state) {
  (void)state;
  char *cwd = join(root, "cwd");
  make_link(fake_path("2.28.9"), join(cwd, "libnccl.so.2"));
  make_link(fake_path("2.28.9"), join(cwd, "lib/libnccl.so.2"));
  make_link(fake_path("2.28.9"), join(cwd, "lib64/libnccl.so.2"));
  make_link(fake_path("2.28.9"),
            join(cwd, "lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"));
  make_link(getenv("CUDA_FAKE"), join(cwd, "libcuda.so.1"));
  char old[4096];
  assert_non_null(getcwd(old, sizeof(old)));
  assert_int_equal(chdir(cwd), 0);

  scenario s;
  const char *overrides[] = {"NCCLSHIM_NCCL_LIBRARY=./libnccl.so.2",
                             "NCCLSHIM_CUDA_LIBRARY=libcuda.so.1", NULL};
  run(&s, overrides);
  expect(&s, "nccl", "INVALID_ARGUMENT", "NCCLSHIM_NCCL_LIBRARY must be an absolute path");
  expect(&s, "cuda", "INVALID_ARGUMENT", "NCCLSHIM_CUDA_LIBRARY must be an absolute path");

  const char *places[] = {"NCCL_HOME=.", "CONDA_PREFIX=lib/..", "CUDA_HOME=.", "VIRTUAL_ENV=.",
                          NULL};
  run(&s, places);
  expect(&s, "nccl", "NOT_FOUND", "libnccl.so.2 was not found");
  expect(&s, "cuda", "NOT_FOUND", "libcuda.so.1 was not found");
  /* loaded, the ld.so cache, system, and the notes of the three directory steps: no place */
  assert_string_equal(scenario_get(&s, "nccl.attempts"), "6");
  assert_int_equal(chdir(old), 0);
}

/* Hostile files in the active environment and the well-known places are refused one by one
 * and the search goes on to the good library after them (the last place searched). */
static void test_search_goes_on(void **state) {
  (void)state;
  char *home = join(root, "home"), *conda = join(root, "conda"), *cuda = join(root, "cuda");
  char *venv = join(root, "venv");
  make_dirs(join(home, "lib/libnccl.so.2")); /* a directory */
  make_dirs(join(conda, "lib"));
  hs_write(join(conda, "lib/libnccl.so.2"), "", 0);                              /* zero bytes */
  make_link(join(cuda, "lib64/libnccl.so.2"), join(cuda, "lib64/libnccl.so.2")); /* a loop */
  make_link(fake_path("2.28.9"), join(cuda, "lib/libnccl.so.2"));                /* the good one */
  const char *wheel = "site-packages/nvidia/nccl/lib";
  char sub[256];
  snprintf(sub, sizeof(sub), "lib/python3.14/%s", wheel);
  make_dirs(join(venv, sub));
  assert_int_equal(mkfifo(join(join(venv, sub), "libnccl.so.2"), 0644), 0); /* a FIFO */
  snprintf(sub, sizeof(sub), "lib/python3.13/%s/libnccl.so.2", wheel);
  const char *foreign = getenv("FOREIGN_LIB");
  if (foreign && foreign[0]) make_link(foreign, join(venv, sub)); /* another architecture */
  snprintf(sub, sizeof(sub), "lib/python3.12/%s/libnccl.so.2", wheel);
  make_link(fake_path("version-silent"), join(venv, sub));

  scenario s;
  const char *env[] = {env_entry("NCCL_HOME", home), env_entry("CONDA_PREFIX", conda),
                       env_entry("CUDA_HOME", cuda), env_entry("VIRTUAL_ENV", venv), NULL};
  run(&s, env);
  expect(&s, "nccl", "OK", "NCCL 2.28.9");
  assert_string_equal(scenario_get(&s, "nccl.via"), "well-known-place");
  assert_string_equal(scenario_get(&s, "nccl.path"), fake_path("2.28.9")); /* link resolved */
  assert_non_null(strstr(hs_attempt(&s, "nccl", "/cuda/lib/"), "well-known-place|OK|"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "/home/lib/"), "LOAD_FAILED"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "/home/lib/"), "is a directory"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "/conda/lib/"), "empty file"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "/cuda/lib64/"), "Too many levels"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "python3.12"), "wrote no version"));
  assert_non_null(strstr(hs_attempt(&s, "nccl", "python3.14"), "is not a regular file"));
  if (foreign && foreign[0])
    assert_non_null(strstr(hs_attempt(&s, "nccl", "python3.13"), "ELF for machine type"));
}

/* A 10,000-character directory in a variable: a clear refusal, a bounded message. A name that
 * long names no file: NOT_FOUND (it was LOAD_FAILED, documented as "a file exists"), and the
 * same candidate reached through two variables is tried once. */
static void test_long_variables(void **state) {
  (void)state;
  scenario s;
  const char *env[] = {env_entry("NCCL_HOME", long_path), env_entry("VIRTUAL_ENV", long_path),
                       env_entry("CONDA_PREFIX", long_path), NULL};
  run(&s, env);
  expect(&s, "nccl", "NOT_FOUND", "libnccl.so.2 was not found");
  assert_non_null(strstr(s.output, "cannot open: the path is too long to name a file"));
  assert_true(strlen(scenario_get(&s, "nccl.message")) < 2048);
}

int main(void) {
  helper = getenv("HELPER");
  char why[512];
  if (!hs_helpers_run(helper, why, sizeof(why))) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_override_variables), cmocka_unit_test(test_empty_variables),
      cmocka_unit_test(test_relative_variables), cmocka_unit_test(test_search_goes_on),
      cmocka_unit_test(test_long_variables),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
