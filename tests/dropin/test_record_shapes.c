/* The recorder in every process shape: NCCL unloaded and loaded again under audit
 * mode, ... Each test failed before its fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "record_case.h"

/* The interposed program's scenario `what` under LD_PRELOAD, recording the last `calls`
 * calls into `dir`, the dump signal USR1. */
static void run_dumping(scenario *s, const char *what, const char *calls, const char *dir) {
  const char *args[] = {what, NULL};
  const char *env[] = {env_entry("NCCLSHIM_RECORD", calls), env_entry("NCCLSHIM_RECORD_DIR", dir),
                       "NCCLSHIM_RECORD_SIGNAL=USR1", NULL};
  run_interposed(s, 1, args, env);
}

/* Lines of the one dump in `dir` that hold both needles. */
static int dump_lines(const char *dir, const char *a, const char *b) {
  char *dump = read_dump(dir, NULL);
  int n = lines(dump, a, b, "");
  free(dump);
  return n;
}

/* Group 1: a program dlcloses NCCL, opens another library (which may be mapped where NCCL's
 * link map was), then NCCL again: no crash, no "second NCCL" warning, and the calls through
 * the NCCL opened again are recorded. */
static void test_audit_nccl_reopened(void **state) {
  (void)state;
  SKIP_UNDER_SANITIZER();
  scenario s;
  char *dir = scratch_dir();
  const char *args[] = {getenv("UNDER_NCCL"), "reopen", getenv("FAKE_CUDA"), NULL};
  const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")), "NCCLSHIM_RECORD=100",
                       env_entry("NCCLSHIM_RECORD_DIR", dir), "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_captured(&s, getenv("AUDIT_USER"), args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "other"), "1");
  assert_string_equal(scenario_get(&s, "init_again_result"), "0");
  assert_int_equal(lines(s.output, "second NCCL", "", ""), 0);
  assert_int_equal(dump_lines(dir, "\"function\":\"ncclAllReduce\"", "\"count\":16,"), 2);
}

/* Group 2: under LD_AUDIT with the recorder on, a program linked to the drop-in still gets
 * NCCL (the auditor leaves an ncclshim loader's dlsym alone); with LD_PRELOAD as well, each
 * call is recorded once, in one dump. */
static void test_audit_leaves_loaders_alone(void **state) {
  (void)state;
  SKIP_UNDER_SANITIZER();
  scenario s;
  char *dir = scratch_dir();
  const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")), "NCCLSHIM_RECORD=100",
                       env_entry("NCCLSHIM_RECORD_DIR", dir),
                       env_entry("NCCLSHIM_NCCL_LIBRARY", getenv("NCCLSHIM_NCCL_LIBRARY")), NULL};
  run_program(&s, getenv("DROPIN_USER"), NULL, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "version_result"), "0");
  assert_string_equal(scenario_get(&s, "allreduce_result"), "0");

  dir = scratch_dir();
  const char *args[] = {"ops", "0", "3", NULL};
  const char *both[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")), "NCCLSHIM_RECORD=100",
                        env_entry("NCCLSHIM_RECORD_DIR", dir), "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_interposed(&s, 1, args, both);
  assert_int_equal(s.exit_code, 0);
  assert_int_equal(dump_count(dir), 1);
  assert_int_equal(dump_lines(dir, "\"function\":\"ncclAllReduce\"", ""), 3);
}

/* Group 7: abort() on another thread while a dump is being written: the dump is finished,
 * then the abort's own is written; no temporary file is left. */
static void test_interrupted_dump_kept(void **state) {
  (void)state;
  scenario s;
  char *dir = scratch_dir();
  run_dumping(&s, "interrupted", "20000", dir);
  assert_int_equal(s.exit_code, 128 + 6); /* SIGABRT */
  assert_string_equal(scenario_get(&s, "aborting_during_dump"), "1");
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote ", "", ""), 2);
  char *dump = read_dump(dir, NULL); /* the one file; read_dump checks there is one */
  assert_int_equal(lines(dump, "\"reason\":\"signal\"", "\"signal\":6,", ""), 1);
  assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", "", ""), 20000);
  free(dump);
  assert_int_equal(dump_count(dir), 1);
}

/* Group 8: a program that dlcloses the drop-in gets its signals' actions back: the dump
 * signal and abort() then do what they did before, not jump into unmapped code. */
static void test_unloaded_handlers_removed(void **state) {
  (void)state;
  static const struct {
    const char *signo;
    int status;
  } cases[] = {{"10", 128 + 10}, {"6", 128 + 6}}; /* SIGUSR1, SIGABRT */
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    scenario s;
    const char *args[] = {getenv("DROPIN_LIBRARY"), "unload", cases[i].signo, NULL};
    const char *env[] = {"NCCLSHIM_RECORD=100", env_entry("NCCLSHIM_RECORD_DIR", scratch_dir()),
                         "NCCLSHIM_RECORD_SIGNAL=USR1", NULL};
    run_captured(&s, getenv("AUDIT_USER"), args, env);
    assert_string_equal(scenario_get(&s, "dlclose"), "0");
    assert_string_equal(scenario_get(&s, "still_mapped"), "0");
    assert_int_equal(s.exit_code, cases[i].status);
  }
}

/* Group 9: the program's own handler keeps its flags: one installed without SA_RESTART still
 * interrupts a blocking read (EINTR) once the recorder wraps it. */
static void test_handler_flags_kept(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {getenv("DROPIN_LIBRARY"), "restart", NULL};
  const char *env[] = {"NCCLSHIM_RECORD=100", env_entry("NCCLSHIM_RECORD_DIR", scratch_dir()),
                       "NCCLSHIM_RECORD_SIGNAL=USR1", NULL};
  run_captured(&s, getenv("AUDIT_USER"), args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "read_eintr"), "1");
  assert_string_equal(scenario_get(&s, "handled"), "10");
}

/* Group 10: glibc's reserved signals (32, 33) are refused, not accepted and never installed;
 * PIPE, URG and TSTP are known by name as by number; URG dumps every time it comes, PIPE
 * dumps, then ends the process as by default. */
static void test_signal_names_and_numbers(void **state) {
  (void)state;
  const char *refused[] = {"NCCLSHIM_RECORD_SIGNAL=32", "NCCLSHIM_RECORD_SIGNAL=33"};
  for (int i = 0; i < 2; i++) {
    scenario s;
    const char *args[] = {"ops", "0", "1", NULL};
    const char *env[] = {"NCCLSHIM_RECORD=10", refused[i], NULL};
    run_interposed(&s, 1, args, env);
    if (lines(s.output, refused[i], ": not a signal name", "the recorder stays off") != 1)
      fail_msg("%s not refused:\n%s", refused[i], s.output);
  }
  static const struct {
    const char *setting, *signo, *times;
    int status, dumps;
  } cases[] = {{"NCCLSHIM_RECORD_SIGNAL=URG", "23", "2", 0, 2},
               {"NCCLSHIM_RECORD_SIGNAL=SIGURG", "23", "1", 0, 1},
               {"NCCLSHIM_RECORD_SIGNAL=PIPE", "13", "1", 128 + 13, 1},
               {"NCCLSHIM_RECORD_SIGNAL=13", "13", "1", 128 + 13, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    scenario s;
    const char *args[] = {"raise", cases[i].signo, cases[i].times, NULL};
    const char *env[] = {"NCCLSHIM_RECORD=10", env_entry("NCCLSHIM_RECORD_DIR", scratch_dir()),
                         cases[i].setting, NULL};
    run_interposed(&s, 1, args, env);
    if (s.exit_code != cases[i].status ||
        lines(s.output, "ncclshim recorder: wrote ", "", "") != cases[i].dumps)
      fail_msg("%s: exit %d:\n%s", cases[i].setting, s.exit_code, s.output);
  }
  /* TSTP is accepted by name (raising it would stop this test's child). */
  scenario s;
  const char *args[] = {"ops", "0", "1", NULL};
  const char *env[] = {"NCCLSHIM_RECORD=10", "NCCLSHIM_RECORD_SIGNAL=TSTP", "NCCLSHIM_DEBUG=1",
                       NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(
      lines(s.output, "ncclshim recorder: recording the last 10 calls", "on signal 20", ""), 1);
}

/* Group 3: a call through a GOT slot (the interposed program takes &ncclAllReduce, so its
 * calls read the address from the GOT) is recorded in audit mode too, once per call. */
static void test_audit_got_calls(void **state) {
  (void)state;
  SKIP_UNDER_SANITIZER();
  scenario s;
  char *dir = scratch_dir();
  const char *args[] = {"ops", "0", "3", NULL};
  const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")),
                       "NCCLSHIM_RECORD=100",
                       env_entry("NCCLSHIM_RECORD_DIR", dir),
                       "NCCLSHIM_RECORD_AT_EXIT=1",
                       "NCCLSHIM_DEBUG=1",
                       NULL};
  run_interposed(&s, 0, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_int_equal(lines(s.output, "audit mode: NCCL mapped:", "however they are bound", ""), 1);
  assert_int_equal(dump_lines(dir, "\"function\":\"ncclAllReduce\"", ""), 3);
}

/* Group 14: the dump's name taken by something else (another user's file in a sticky
 * directory; a directory here): the next dump takes a name with a random suffix. */
static void test_planted_name(void **state) {
  (void)state;
  scenario s;
  run_dumping(&s, "plant", "100", scratch_dir());
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "planted"), "1");
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote ", "", ""), 2);
  assert_int_equal(lines(s.output, "cannot rename", "", ""), 0);
  const char *second = strstr(strstr(s.output, "planted=1"), "wrote ");
  assert_non_null(second);
  const char *end = strstr(second, ".jsonl");
  assert_non_null(end);
  assert_true(end - second > 17 && end[-17] == '-'); /* -SUFFIX: 16 hex digits */
}

/* Group 15: "wrote" names where the directory is now, and a directory path of 4000
 * characters in full. */
static void test_written_paths(void **state) {
  (void)state;
  scenario s;
  char *dir = scratch_dir();
  run_dumping(&s, "movedir", "100", dir);
  assert_string_equal(scenario_get(&s, "moved"), "1");
  char moved[4096];
  snprintf(moved, sizeof(moved), "wrote %s-moved/ncclshim-record-", dir);
  assert_int_equal(lines(s.output, moved, "", ""), 1);

  char deep[4200];
  int used = snprintf(deep, sizeof(deep), "%s", scratch_dir());
  while (used < 4000) { /* components of 200 characters */
    deep[used++] = '/';
    memset(deep + used, 'd', 200);
    used += 200;
    deep[used] = '\0';
    assert_int_equal(mkdir(deep, 0700), 0);
  }
  run_dumping(&s, "signal", "100", deep);
  char *wrote = strstr(s.output, "ncclshim recorder: wrote ");
  assert_non_null(wrote);
  assert_int_equal(strncmp(wrote + 25, deep, strlen(deep)), 0);
  assert_non_null(strstr(wrote + 25 + strlen(deep), ".jsonl\n"));
}

/* Group 15: a directory that refuses files (/sys) is refused at start, not at every dump;
 * the drop-in's lines show a path's control characters escaped. */
static void test_start_checks_and_escapes(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"error", NULL};
  const char *env[] = {"NCCLSHIM_RECORD=10", "NCCLSHIM_RECORD_DIR=/sys", NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(lines(s.output, "NCCLSHIM_RECORD_DIR=/sys: ", "the recorder stays off", ""), 1);
  assert_int_equal(lines(s.output, "cannot create a dump", "", ""), 0);

  char *dir = scratch_dir(), odd[4096], nccl[4200];
  snprintf(odd, sizeof(odd), "%s/e\033[31mred", dir);
  assert_int_equal(mkdir(odd, 0700), 0);
  snprintf(nccl, sizeof(nccl), "%s/libnccl.so.2", odd);
  copy_file(getenv("NCCLSHIM_NCCL_LIBRARY"), nccl, (size_t)-1, 0); /* a link would be resolved */
  const char *debug[] = {"NCCLSHIM_DEBUG=1", env_entry("NCCLSHIM_NCCL_LIBRARY", nccl), NULL};
  run_captured(&s, getenv("DROPIN_USER"), NULL, debug);
  assert_int_equal(lines(s.output, "ncclshim drop-in: forwarding to NCCL 2.28.9 from ",
                         "e\\x1b[31mred/libnccl.so.2", ""),
                   1);
  assert_int_equal(lines(s.output, "ncclshim", "\033", ""), 0); /* the loader's lines too */
}

int run_record_shapes_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_audit_nccl_reopened),
      cmocka_unit_test(test_audit_leaves_loaders_alone),
      cmocka_unit_test(test_interrupted_dump_kept),
      cmocka_unit_test(test_unloaded_handlers_removed),
      cmocka_unit_test(test_handler_flags_kept),
      cmocka_unit_test(test_signal_names_and_numbers),
      cmocka_unit_test(test_audit_got_calls),
      cmocka_unit_test(test_planted_name),
      cmocka_unit_test(test_written_paths),
      cmocka_unit_test(test_start_checks_and_escapes),
  };
  return cmocka_run_group_tests_name("recorder shapes", tests, NULL, NULL);
}
