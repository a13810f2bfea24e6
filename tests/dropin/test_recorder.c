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

#include "record_case.h"

#define ALL_REDUCE "\"function\":\"ncclAllReduce\""
#define FLOAT_SUM                                                                         \
  "\"count\":1024,\"datatype\":7,\"datatype_name\":\"ncclFloat32\",\"op\":0,\"op_name\":" \
  "\"ncclSum\""

static const record_case test_sequence_numbers = {
    .args = {"ops", "1", "5"},
    .env = {AT_EXIT},
    .dump = {{{ALL_REDUCE, "\"seq\":1,", FLOAT_SUM}, 1},
             {{ALL_REDUCE, "\"seq\":2,", FLOAT_SUM}, 1},
             {{ALL_REDUCE, "\"seq\":3,", FLOAT_SUM}, 1},
             {{ALL_REDUCE, "\"seq\":4,", FLOAT_SUM}, 1},
             {{ALL_REDUCE, "\"seq\":5,", FLOAT_SUM}, 1},
             {{CALL_LINE, "\"state\":\"returned\"", "\"thread\":"}, 6},
             {{COMM_LINE, "\"rank\":1,\"nranks\":2,\"last_seq\":5",
               "\"created_by\":\"ncclCommInitRank\""},
              1},
             {{"\"function\":\"ncclCommInitRank\"", "\"rank\":1", "\"result\":0"}, 1}},
};

/* NCCLSHIM_RECORD=4 keeps the last four. */
static const record_case test_last_n = {
    .args = {"ops", "0", "10"},
    .env = {"NCCLSHIM_RECORD=4", AT_EXIT},
    .dump = {{{CALL_LINE}, 4},
             {{"\"seq\":7,"}, 1},
             {{"\"seq\":10,"}, 1},
             {{HEADER_LINE, "\"capacity\":4,\"calls\":11,"}, 1}},
};

static const record_case test_dump_on_error = {
    .args = {"error"},
    .values = {{"error_result", "3"}},
    .dump = {{{"\"reason\":\"error\",\"function\":\"ncclAllReduce\",\"result\":3"}, 1},
             {{"\"seq\":3,", "\"result\":3,\"result_name\":\"ncclInternalError\"",
               "\"op_name\":\"ncclMax\""},
              1}},
};

/* Reported three times, dumped once; the polls that reported nothing are not recorded. */
static const record_case test_dump_on_async_error = {
    .args = {"async"},
    .values = {{"async", "6"}},
    .output = {{{WROTE}, 1}},
    .dump = {{{"\"reason\":\"async-error\"", "\"result\":6", "\"rank\":1"}, 1},
             {{COMM_LINE, "\"async_error\":6"}, 1},
             {{CALL_LINE, "\"function\":\"ncclCommGetAsyncError\""}, 1}},
};

/* A row whose role is QUERY: the three calls that succeeded are not recorded, the failing
 * one is, and dumps. */
static const record_case test_query_only_on_failure = {
    .args = {"query"},
    .values = {{"query_result", "4"}, {"query_calls", "4"}},
    .dump = {{{"\"reason\":\"error\",\"function\":\"ncclParamGetI32\",\"result\":4"}, 1},
             {{CALL_LINE, "\"function\":\"ncclParamGetI32\""}, 1},
             {{CALL_LINE, "\"function\":\"ncclParamGetI32\"",
               "\"result\":4,\"result_name\":\"ncclInvalidArgument\""},
              1},
             {{CALL_LINE, ALL_REDUCE}, 1}},
};

/* USR1 dumps and goes on. */
static const record_case test_dump_on_signal = {
    .args = {"signal"},
    .env = {"NCCLSHIM_RECORD_SIGNAL= SIGUSR1\t"}, /* blanks around the name are ignored */
    .values = {{"alive", "1"}},
    .dump = {{{"\"reason\":\"signal\",\"signal\":" NUMBER(SIGUSR1) ","}, 1},
             {{ALL_REDUCE, "\"seq\":2,"}, 1}},
};

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
  static const record_case split = {.args = {"split"}, .env = {AT_EXIT}};
  scenario s;
  char *first = read_dump(record_run(&s, &split), NULL);
  char *second = read_dump(record_run(&s, &split), NULL);
  char *id = child_comm_id(first), *again = child_comm_id(second);
  assert_string_equal(id, again);
  const line_count rows[] = {{{id, CALL_LINE, "\"seq\":2,"}, 1},
                             {{COMM_LINE, "\"last_seq\":1,"}, 1}, /* the parent */
                             {{COMM_LINE, id, "\"last_seq\":2,"}, 1}};
  EXPECT_LINES(first, rows);
  free(id);
  free(again);
  free(first);
  free(second);
}

/* An error with NCCLSHIM_RECORD unset: the recorder says nothing and writes nothing. Or, with
 * `setting` (NCCLSHIM_RECORD=10 added unless it is another count), the setting refused with
 * `message`, and no dump. */
static void expect_no_recorder(const char *setting, const char *message) {
  char *dir = scratch_dir();
  scenario s;
  const char *args[] = {"error", NULL};
  const char *count = setting != NULL && strncmp(setting, "NCCLSHIM_RECORD=", 16) != 0
                          ? "NCCLSHIM_RECORD=10"
                          : NULL;
  const char *record_dir = setting != NULL && strncmp(setting, "NCCLSHIM_RECORD_DIR=", 20) == 0
                               ? setting
                               : env_entry("NCCLSHIM_RECORD_DIR", dir);
  const char *env[5] = {record_dir, AT_EXIT};
  int n = 2;
  if (setting != NULL && setting != record_dir) env[n++] = setting;
  if (count != NULL) env[n++] = count;
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "error_result"), "3");
  if (setting == NULL)
    assert_null(strstr(s.output, "ncclshim recorder"));
  else if (strstr(s.output, message) == NULL)
    fail_msg("no \"%s\" in:\n%s", message, s.output);
  assert_int_equal(dump_count(dir), 0);
}

static void test_off_by_default(void **state) {
  (void)state;
  expect_no_recorder(NULL, NULL);
}

static void test_bad_settings(void **state) {
  (void)state;
  const char *count = "not a number of calls from 1 to 16777216; the recorder stays off";
  static const char *const refused[][2] = {
      {"NCCLSHIM_RECORD=0", NULL},
      {"NCCLSHIM_RECORD=-3", NULL},
      {"NCCLSHIM_RECORD=12abc", NULL},
      {"NCCLSHIM_RECORD=99999999999999999999999", NULL},
      /* Longer than the number's buffer: refused whole, never read as its first digit. */
      {"NCCLSHIM_RECORD=5                                                                  x",
       NULL},
      {"NCCLSHIM_RECORD_DIR=/nonexistent/dumps",
       "NCCLSHIM_RECORD_DIR=/nonexistent/dumps: No such file or directory"},
      {"NCCLSHIM_RECORD_SIGNAL=KILL", "NCCLSHIM_RECORD_SIGNAL=KILL: not a signal"},
      {"NCCLSHIM_RECORD_SIGNAL=USR9", "NCCLSHIM_RECORD_SIGNAL=USR9: not a signal"},
  };
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
    expect_no_recorder(refused[i][0], refused[i][1] != NULL ? refused[i][1] : count);
}

int run_recorder_tests(void) {
  const struct CMUnitTest tests[] = {
      RECORD_CASE_TEST(test_sequence_numbers),
      RECORD_CASE_TEST(test_last_n),
      RECORD_CASE_TEST(test_dump_on_error),
      RECORD_CASE_TEST(test_dump_on_async_error),
      RECORD_CASE_TEST(test_query_only_on_failure),
      RECORD_CASE_TEST(test_dump_on_signal),
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_off_by_default),
      cmocka_unit_test(test_bad_settings),
  };
  return cmocka_run_group_tests_name("recorder", tests, NULL, NULL);
}
