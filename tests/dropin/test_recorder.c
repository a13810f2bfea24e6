/* The flight recorder, on the interposed program: off by default; the last N calls with a
 * sequence number per communicator; a dump on an error, on an asynchronous error (once), on
 * the chosen signal and at exit; bad settings refused with a message, the program unharmed. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dropin_tests.h"

/* Run `args` recording into a fresh directory; returns the directory. */
static char *record(scenario *s, const char *calls, const char *const *args, const char *more) {
  char *dir = scratch_dir();
  const char *env[] = {env_entry("NCCLSHIM_RECORD", calls), env_entry("NCCLSHIM_RECORD_DIR", dir),
                       more, NULL};
  run_interposed(s, 1, args, env);
  assert_int_equal(s->exit_code, 0);
  return dir;
}

static int lines(const char *text, const char *a, const char *b, const char *c) {
  const char *needles[] = {a, b, c, NULL};
  return count_lines(text, needles);
}

static void test_sequence_numbers(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"ops", "1", "5", NULL};
  char *dump = read_dump(record(&s, "100", args, "NCCLSHIM_RECORD_AT_EXIT=1"), NULL);
  for (int seq = 1; seq <= 5; seq++) {
    char key[32];
    snprintf(key, sizeof(key), "\"seq\":%d,", seq);
    assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", key,
                           "\"count\":1024,\"datatype\":7,\"datatype_name\":\"ncclFloat32\","
                           "\"op\":0,\"op_name\":\"ncclSum\""),
                     1);
  }
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "\"state\":\"returned\"", "\"thread\":"), 6);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"rank\":1,\"nranks\":2,\"last_seq\":5",
                         "\"created_by\":\"ncclCommInitRank\""),
                   1);
  assert_int_equal(lines(dump, "\"function\":\"ncclCommInitRank\"", "\"rank\":1", "\"result\":0"),
                   1);
  free(dump);
}

/* NCCLSHIM_RECORD=4 keeps the last four. */
static void test_last_n(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"ops", "0", "10", NULL};
  char *dump = read_dump(record(&s, "4", args, "NCCLSHIM_RECORD_AT_EXIT=1"), NULL);
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "", ""), 4);
  assert_int_equal(lines(dump, "\"seq\":7,", "", ""), 1);
  assert_int_equal(lines(dump, "\"seq\":10,", "", ""), 1);
  assert_int_equal(lines(dump, "\"kind\":\"header\"", "\"capacity\":4,\"calls\":11,", ""), 1);
  free(dump);
}

static void test_dump_on_error(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"error", NULL};
  char *dump = read_dump(record(&s, "100", args, NULL), NULL);
  assert_string_equal(scenario_get(&s, "error_result"), "3");
  assert_int_equal(
      lines(dump, "\"reason\":\"error\",\"function\":\"ncclAllReduce\",\"result\":3", "", ""), 1);
  assert_int_equal(lines(dump, "\"seq\":3,", "\"result\":3,\"result_name\":\"ncclInternalError\"",
                         "\"op_name\":\"ncclMax\""),
                   1);
  free(dump);
}

/* Reported three times, dumped once; the polls that reported nothing are not recorded. */
static void test_dump_on_async_error(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"async", NULL};
  char *dump = read_dump(record(&s, "100", args, NULL), NULL);
  assert_string_equal(scenario_get(&s, "async"), "6");
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote", "", ""), 1);
  assert_int_equal(lines(dump, "\"reason\":\"async-error\"", "\"result\":6", "\"rank\":1"), 1);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"async_error\":6", ""), 1);
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "\"function\":\"ncclCommGetAsyncError\"", ""),
                   1);
  free(dump);
}

/* A row whose role is QUERY: the three calls that succeeded are not recorded, the failing
 * one is, and dumps. */
static void test_query_only_on_failure(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"query", NULL};
  char *dump = read_dump(record(&s, "100", args, NULL), NULL);
  assert_string_equal(scenario_get(&s, "query_result"), "4");
  assert_string_equal(scenario_get(&s, "query_calls"), "4");
  assert_int_equal(
      lines(dump, "\"reason\":\"error\",\"function\":\"ncclParamGetI32\",\"result\":4", "", ""), 1);
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "\"function\":\"ncclParamGetI32\"", ""), 1);
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "\"function\":\"ncclParamGetI32\"",
                         "\"result\":4,\"result_name\":\"ncclInvalidArgument\""),
                   1);
  assert_int_equal(lines(dump, "\"kind\":\"call\"", "\"function\":\"ncclAllReduce\"", ""), 1);
  free(dump);
}

static void test_dump_on_signal(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"signal", NULL};
  char *dump = read_dump(record(&s, "100", args, "NCCLSHIM_RECORD_SIGNAL=SIGUSR1"), NULL);
  assert_string_equal(scenario_get(&s, "alive"), "1"); /* USR1 dumps and goes on */
  char expected[64];
  snprintf(expected, sizeof(expected), "\"reason\":\"signal\",\"signal\":%d,", SIGUSR1);
  assert_int_equal(lines(dump, expected, "", ""), 1);
  assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", "\"seq\":2,", ""), 1);
  free(dump);
}

static char *child_comm_id(const char *dump) {
  const char *line = strstr(dump, "\"created_by\":\"ncclCommSplit\"");
  assert_non_null(line);
  while (line > dump && line[-1] != '\n') line--;
  const char *id = strstr(line, "\"comm_id\":\"");
  assert_non_null(id);
  return strndup(id, 11 + 16);
}

/* A split communicator numbers its own operations and has the same identity in every
 * process that makes it (here: two runs). */
static void test_split(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"split", NULL};
  char *first = read_dump(record(&s, "100", args, "NCCLSHIM_RECORD_AT_EXIT=1"), NULL);
  char *second = read_dump(record(&s, "100", args, "NCCLSHIM_RECORD_AT_EXIT=1"), NULL);
  char *id = child_comm_id(first), *again = child_comm_id(second);
  assert_string_equal(id, again);
  assert_int_equal(lines(first, id, "\"kind\":\"call\"", "\"seq\":2,"), 1);
  assert_int_equal(lines(first, "\"kind\":\"comm\"", "\"last_seq\":1,", ""), 1); /* the parent */
  assert_int_equal(lines(first, "\"kind\":\"comm\"", id, "\"last_seq\":2,"), 1);
  free(id);
  free(again);
  free(first);
  free(second);
}

static void test_off_by_default(void **state) {
  (void)state;
  char *dir = scratch_dir();
  scenario s;
  const char *args[] = {"error", NULL};
  const char *env[] = {env_entry("NCCLSHIM_RECORD_DIR", dir), "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "error_result"), "3");
  assert_null(strstr(s.output, "ncclshim recorder"));
  assert_int_equal(dump_count(dir), 0);
}

static void expect_refused(const char *setting, const char *message) {
  char *dir = scratch_dir();
  scenario s;
  const char *args[] = {"error", NULL};
  /* NCCLSHIM_RECORD=10 unless the setting is another count. */
  const char *count =
      strncmp(setting, "NCCLSHIM_RECORD=", 16) == 0 ? setting : "NCCLSHIM_RECORD=10";
  /* No second entry of one name: qemu-user (the aarch64 job's wrapper) keeps the last one. */
  const char *record_dir = strncmp(setting, "NCCLSHIM_RECORD_DIR=", 20) == 0
                               ? setting
                               : env_entry("NCCLSHIM_RECORD_DIR", dir);
  const char *env[] = {setting, count, record_dir, NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "error_result"), "3");
  if (strstr(s.output, message) == NULL) fail_msg("no \"%s\" in:\n%s", message, s.output);
  assert_int_equal(dump_count(dir), 0);
}

static void test_bad_settings(void **state) {
  (void)state;
  const char *count = "not a number of calls from 1 to 16777216; the recorder stays off";
  expect_refused("NCCLSHIM_RECORD=0", count);
  expect_refused("NCCLSHIM_RECORD=-3", count);
  expect_refused("NCCLSHIM_RECORD=12abc", count);
  expect_refused("NCCLSHIM_RECORD=99999999999999999999999", count);
  expect_refused("NCCLSHIM_RECORD_DIR=/nonexistent/dumps",
                 "NCCLSHIM_RECORD_DIR=/nonexistent/dumps: No such file or directory");
  expect_refused("NCCLSHIM_RECORD_SIGNAL=KILL", "NCCLSHIM_RECORD_SIGNAL=KILL: not a signal");
  expect_refused("NCCLSHIM_RECORD_SIGNAL=USR9", "NCCLSHIM_RECORD_SIGNAL=USR9: not a signal");
}

int run_recorder_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sequence_numbers),
      cmocka_unit_test(test_last_n),
      cmocka_unit_test(test_dump_on_error),
      cmocka_unit_test(test_dump_on_async_error),
      cmocka_unit_test(test_query_only_on_failure),
      cmocka_unit_test(test_dump_on_signal),
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_off_by_default),
      cmocka_unit_test(test_bad_settings),
  };
  return cmocka_run_group_tests_name("recorder", tests, NULL, NULL);
}
