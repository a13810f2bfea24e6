/* secure_getenv: a setuid or setgid process (AT_SECURE) ignores every variable ncclshim reads.
 * The secure helper (ncclshim's objects linked in: in a secure process ld.so ignores
 * LD_LIBRARY_PATH and $ORIGIN) runs twice with the same environment: as is, where the
 * variables steer both searches, the debug trail and the well-known places; and with
 * AT_SECURE set, where none of them may. AT_SECURE comes from the kernel at exec: as root,
 * (1) a child whose real uid is not root while its effective uid is (setresuid(65534, 0, 0)),
 * and (2) a setgid copy of the helper (group 65534). Needs root; skipped otherwise. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hardening.h"

static char *root, *helper;
static const char *env[16];

enum { AS_IS, REAL_UID_NOBODY };

/* Start `program` (directly, no ld.so) with the test environment; `how` picks the ids. */
static void start(scenario *s, const char *program, int how) {
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[0]);
    if (how == REAL_UID_NOBODY && setresuid(65534, 0, 0) != 0) {
      printf("setresuid_failed=%s\n", strerror(errno));
      _exit(0);
    }
    char *argv[] = {(char *)program, NULL};
    execve(program, argv, (char *const *)env);
    printf("exec_failed=%s\n", strerror(errno));
    _exit(0);
  }
  close(pipefd[1]);
  collect_output(s, pipefd[0], pid);
}

static int setup(void **state) {
  (void)state;
  root = scratch_dir();
  chmod(root, 0755);
  char *venv = join(root, "venv");
  make_dirs(join(venv, "lib/python3.12/site-packages/nvidia/nccl/lib"));
  int n = 0;
  env[n++] = env_entry("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.9"));
  env[n++] = env_entry("NCCLSHIM_CUDA_LIBRARY", getenv("CUDA_FAKE"));
  env[n++] = "NCCLSHIM_DEBUG=1";
  env[n++] = env_entry("NCCL_HOME", join(root, "home"));
  env[n++] = env_entry("CONDA_PREFIX", join(root, "conda"));
  env[n++] = env_entry("CUDA_HOME", join(root, "cuda"));
  env[n++] = env_entry("VIRTUAL_ENV", venv);
  env[n] = NULL;
  return 0;
}

/* Where the variables were honoured. */
static void expect_honoured(const scenario *s) {
  if (strcmp(scenario_get(s, "end"), "1") != 0) fail_msg("the helper failed:\n%s", s->output);
  assert_string_equal(scenario_get(s, "at_secure"), "0");
  assert_string_equal(scenario_get(s, "nccl.via"), "environment");
  assert_string_equal(scenario_get(s, "cuda.via"), "environment");
  assert_string_equal(scenario_get(s, "debug_enabled"), "1");
  assert_true(hs_count_lines(s, "ncclshim: ") > 0);
  assert_true(hs_count_lines(s, "ncclshim cuda: ") > 0);
  /* the wheel directory, conda/lib (the active environment), home/lib, cuda/lib64, cuda/lib */
  int ours = 0;
  for (int i = 0; i < atoi(scenario_get(s, "places")); i++) {
    char key[32];
    snprintf(key, sizeof(key), "place.%d", i);
    if (strncmp(scenario_get(s, key), root, strlen(root)) == 0) ours++;
  }
  assert_int_equal(ours, 5);
}

/* Where AT_SECURE was set: none of them. */
static void expect_ignored(const scenario *s) {
  if (strcmp(scenario_get(s, "end"), "1") != 0) fail_msg("the helper failed:\n%s", s->output);
  assert_string_equal(scenario_get(s, "at_secure"), "1");
  /* No line of the environment step (the active environment's note may contain its name). */
  assert_int_not_equal(strncmp(hs_attempt(s, "nccl", "environment|"), "environment|", 12), 0);
  assert_string_equal(hs_attempt(s, "cuda", "environment|"), "");
  assert_string_not_equal(scenario_get(s, "nccl.via"), "environment");
  assert_string_not_equal(scenario_get(s, "cuda.via"), "environment");
  assert_string_equal(scenario_get(s, "debug_enabled"), "0");
  assert_int_equal(hs_count_lines(s, "ncclshim"), 0);
  assert_null(strstr(s->output, root)); /* no place, path or message names the scratch tree */
}

static void test_real_uid_differs(void **state) {
  (void)state;
  scenario s;
  start(&s, helper, AS_IS);
  expect_honoured(&s);
  start(&s, helper, REAL_UID_NOBODY);
  if (scenario_get(&s, "setresuid_failed")[0] != '\0')
    skip(); /* no CAP_SETUID here (a restricted container) */
  expect_ignored(&s);
}

static void test_setgid_binary(void **state) {
  (void)state;
  char *copy = join(root, "secure_helper");
  copy_file(helper, copy, (size_t)-1, 0);
  scenario s;
  start(&s, copy, AS_IS);
  expect_honoured(&s);
  assert_int_equal(chown(copy, 0, 65534), 0);
  assert_int_equal(chmod(copy, 02755), 0);
  start(&s, copy, AS_IS);
  if (strcmp(scenario_get(&s, "at_secure"), "0") == 0) {
    print_message("the setgid bit did not take effect (a nosuid file system?)\n");
    skip();
  }
  expect_ignored(&s);
}

int main(void) {
  helper = getenv("SECURE_HELPER");
  char why[512];
  if (geteuid() != 0) {
    printf("skipped: needs root, to start processes whose real and effective ids differ\n");
    return 77;
  }
  const char *wrapper[8];
  if (test_wrapper_words(wrapper, 8) > 0) {
    /* The setgid copy must be started by the kernel itself: through qemu-user, the kernel
     * starts qemu, not the program, and gives the program no AT_SECURE. */
    printf("skipped: a setgid program started through %s gets no AT_SECURE\n", wrapper[0]);
    return 77;
  }
  if (!hs_helpers_run(helper, why, sizeof(why))) {
    printf("skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_uid_differs),
      cmocka_unit_test(test_setgid_binary),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
