/* The recorder with a CUDA driver (the fake of fake_cuda_events.c): operations on a capturing
 * stream are marked "captured"; NCCLSHIM_RECORD_HANG_MS dumps once, reason "hang", when an
 * operation's event has not completed in time, with one line on stderr; captured operations
 * get no event, and with the setting off no event is recorded at all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dropin_tests.h"

/* Run the interposed program's scenario `what` with the fake driver, recording into a fresh
 * directory; `hang_ms` NULL leaves NCCLSHIM_RECORD_HANG_MS unset. Returns the directory. */
static char *run_mode(scenario *s, int audit, const char *what, const char *hang_ms) {
  char *dir = scratch_dir();
  const char *args[] = {what, NULL};
  const char *env[] = {audit ? env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")) : "AUDIT=0",
                       env_entry("NCCLSHIM_RECORD", "100"),
                       env_entry("NCCLSHIM_RECORD_DIR", dir),
                       env_entry("FAKE_CUDA", getenv("FAKE_CUDA")),
                       env_entry("NCCLSHIM_CUDA_LIBRARY", getenv("FAKE_CUDA")),
                       hang_ms != NULL ? env_entry("NCCLSHIM_RECORD_HANG_MS", hang_ms) : NULL,
                       NULL};
  run_interposed(s, !audit, args, env);
  assert_int_equal(s->exit_code, 0);
  return dir;
}

static char *run_with_cuda(scenario *s, const char *what, const char *hang_ms) {
  return run_mode(s, 0, what, hang_ms);
}

static int lines(const char *text, const char *a, const char *b, const char *c) {
  const char *needles[] = {a, b, c, NULL};
  return count_lines(text, needles);
}

static void test_captured_marked(void **state) {
  (void)state;
  scenario s;
  run_with_cuda(&s, "captured", NULL);
  assert_string_equal(scenario_get(&s, "events_recorded"), "0"); /* off: no event at all */
  /* An error-free run writes no dump; run again with a dump at exit to read the marks. */
  char *at_exit = scratch_dir();
  const char *args[] = {"captured", NULL};
  const char *env[] = {env_entry("NCCLSHIM_RECORD", "100"),
                       env_entry("NCCLSHIM_RECORD_DIR", at_exit),
                       "NCCLSHIM_RECORD_AT_EXIT=1",
                       env_entry("FAKE_CUDA", getenv("FAKE_CUDA")),
                       env_entry("NCCLSHIM_CUDA_LIBRARY", getenv("FAKE_CUDA")),
                       NULL};
  run_interposed(&s, 1, args, env);
  char *dump = read_dump(at_exit, NULL);
  assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", "\"captured\":true", ""), 2);
  assert_int_equal(lines(dump, "\"seq\":3,", "\"captured\":true", ""), 0);
  assert_int_equal(lines(dump, "\"seq\":3,", "\"function\":\"ncclAllReduce\"", ""), 1);
  free(dump);
}

/* With the hang dump on, the idle stream's operation gets an event; the captured ones none. */
static void test_captured_get_no_event(void **state) {
  (void)state;
  scenario s;
  run_with_cuda(&s, "captured", "60000");
  assert_string_equal(scenario_get(&s, "events_recorded"), "1");
}

static void expect_hang(int audit, const char *what) {
  scenario s;
  char *dir = run_mode(&s, audit, what, "100");
  assert_string_equal(scenario_get(&s, "dumped"), "1");
  /* The hang thread's queries in thread-local capture mode (CU_STREAM_CAPTURE_MODE_...). */
  assert_string_equal(scenario_get(&s, "capture_mode"), "1");
  char *dump = read_dump(dir, NULL);
  if (lines(dump, "\"reason\":\"hang\",\"function\":\"ncclAllReduce\",\"hang_ms\":100",
            "\"stuck_call\":", "") != 1)
    fail_msg("no hang header in:\n%s", dump);
  /* One line on stderr, naming the call; the two idle all-reduces were no hang. */
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote ",
                         "(hang: ncclAllReduce #3 not complete after 100 ms)", ""),
                   1);
  assert_int_equal(lines(s.output, "ncclshim recorder:", "", ""), 1);
  free(dump);
}

static void test_hang_dump(void **state) {
  (void)state;
  expect_hang(0, "hang");
}

/* Audit mode takes the driver from the program's libcuda, never loading one of its own. */
static void test_hang_dump_audit(void **state) {
  (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  skip(); /* an auditor's namespace would get a second copy of the sanitizer's runtime */
#endif
  expect_hang(1, "hang");
}

/* Inside a group, the event is recorded at ncclGroupEnd, when NCCL launches the work. */
static void test_hang_dump_in_group(void **state) {
  (void)state;
  expect_hang(0, "hanggroup");
}

static void test_hang_setting_refused(void **state) {
  (void)state;
  scenario s;
  run_with_cuda(&s, "captured", "soon");
  assert_int_equal(lines(s.output, "NCCLSHIM_RECORD_HANG_MS=soon: not a number of milliseconds",
                         "the recorder stays off", ""),
                   1);
}

int run_record_hang_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_captured_marked), cmocka_unit_test(test_captured_get_no_event),
      cmocka_unit_test(test_hang_dump),       cmocka_unit_test(test_hang_dump_in_group),
      cmocka_unit_test(test_hang_dump_audit), cmocka_unit_test(test_hang_setting_refused),
  };
  return cmocka_run_group_tests_name("record-hang", tests, NULL, NULL);
}
