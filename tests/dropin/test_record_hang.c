/* The recorder with a CUDA driver (the fake of tests/fakes): operations on a capturing
 * stream are marked "captured"; NCCLSHIM_RECORD_HANG_MS dumps once, reason "hang", when an
 * operation's event has not completed in time, with one line on stderr; captured operations
 * get no event, and with the setting off no event is recorded at all; every other operation
 * has its event recorded in its call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "record_case.h"

#define ALL_REDUCE "\"function\":\"ncclAllReduce\""

/* With the setting off, no event at all. An error-free run writes no dump: a dump at exit
 * shows the marks. */
static const record_case test_captured_marked = {
    .args = {"captured"},
    .env = {AT_EXIT},
    .cuda = 1,
    .values = {{"events_recorded", "0"}},
    .dump = {{{ALL_REDUCE, "\"captured\":true"}, 2},
             {{"\"seq\":3,", "\"captured\":true"}, 0},
             {{"\"seq\":3,", ALL_REDUCE}, 1}},
};

/* With the hang dump on, the idle stream's operation gets an event; the captured ones none. */
static const record_case test_captured_get_no_event = {
    .args = {"captured"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=60000"},
    .cuda = 1,
    .values = {{"events_recorded", "1"}},
};

/* A hang: the hang thread's queries in thread-local capture mode (CU_STREAM_CAPTURE_MODE_...);
 * one line on stderr, naming the call (the two idle all-reduces were no hang). */
#define HANG_CASE(scenario, in_audit)                                                         \
  {                                                                                           \
    .args = {scenario}, .env = {"NCCLSHIM_RECORD_HANG_MS=100"}, .cuda = 1, .audit = in_audit, \
    .values = {{"dumped", "1"}, {"capture_mode", "1"}},                                       \
    .output = {{{WROTE, "(hang: ncclAllReduce #3 not complete after 100 ms)"}, 1},            \
               {{"ncclshim recorder:"}, 1}},                                                  \
    .dump = {{{"\"reason\":\"hang\",\"function\":\"ncclAllReduce\",\"hang_ms\":100",          \
               "\"stuck_call\":"},                                                            \
              1}},                                                                            \
  }

static const record_case test_hang_dump = HANG_CASE("hang", 0);
/* Audit mode takes the driver from the program's libcuda, never loading one of its own. */
static const record_case test_hang_dump_audit = HANG_CASE("hang", 1);
/* Inside a group, the event is recorded at ncclGroupEnd, when NCCL launches the work. */
static const record_case test_hang_dump_in_group = HANG_CASE("hanggroup", 0);

/* Every operation's call records an event (none is recorded later, by any thread); those of
 * one stream between two looks share one, recorded again: the hang names the oldest group's
 * first operation, and how many follow it under its event (how the looks fell decides). */
#define OWN_EVENT_HANG_CASE(scenario, events, first)                                         \
  {                                                                                          \
    .args = {scenario}, .env = {"NCCLSHIM_RECORD_HANG_MS=100"}, .cuda = 1,                   \
    .values = {{"dumped", "1"}, {"events_recorded", events}},                                \
    .output = {{{WROTE, "(hang: ncclAllReduce #" first, " not complete after 100 ms)"}, 1}}, \
  }

/* A burst on a held stream: 1000 records, the first all-reduce named. */
static const record_case test_hang_burst_event_each = OWN_EVENT_HANG_CASE("heldburst", "1000", "1");
/* Two held streams taking turns: a record each, the first named. */
static const record_case test_hang_streams_event_each =
    OWN_EVENT_HANG_CASE("alternate", "200", "1");
/* The first operation completes, the work after it does not: the first is named with the
 * 49 after it when they share its event (which one hangs, that event cannot tell), the
 * second when a look came between them. */
static const record_case test_hang_after_completed_work = OWN_EVENT_HANG_CASE("lateheld", "50", "");

/* Events that complete: one per call, and no dump. */
static const record_case test_hang_idle_burst_event_each = {
    .args = {"idleburst"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=60000"},
    .cuda = 1,
    .values = {{"events_recorded", "200"}},
};

/* A forked child forgets its parent's events and thread (pthread_atfork tells it, with no
 * getpid() per call) and starts a tracker of its own; the driver, as the real one, refuses
 * CUDA in a child forked after cuInit: its operation is said not watched (never a query of
 * the parent's events, never a silent drop), and no dump comes. */
static const record_case test_hang_dump_in_forked_child = {
    .args = {"forkhang"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=100"},
    .cuda = 1,
    .native = 1,
    .values = {{"child_dumped", "0"}},
    .output = {{{"ncclshim recorder: no hang dump: ncclAllReduce #2 is not watched: "
                 "cuStreamGetCtx failed (3)"},
                1},
               {{WROTE}, 0}},
};

/* No CUDA driver in the process: the first operation says there is no hang dump (once),
 * none is promised silently. */
static const record_case test_hang_without_driver_said = {
    .args = {"ops", "0", "3"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=100"},
    .output = {{{"ncclshim recorder: no hang dump: NCCLSHIM_RECORD_HANG_MS=100 is set, but no "
                 "CUDA driver is loaded in this process"},
                1}},
};

static const record_case test_hang_setting_refused = {
    .args = {"captured"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=soon"},
    .cuda = 1,
    .output = {{{"NCCLSHIM_RECORD_HANG_MS=soon: not a number of milliseconds",
                 "the recorder stays off"},
                1}},
};

int run_record_hang_tests(void) {
  const struct CMUnitTest tests[] = {
      RECORD_CASE_TEST(test_captured_marked),
      RECORD_CASE_TEST(test_captured_get_no_event),
      RECORD_CASE_TEST(test_hang_dump),
      RECORD_CASE_TEST(test_hang_dump_in_group),
      RECORD_CASE_TEST(test_hang_dump_audit),
      RECORD_CASE_TEST(test_hang_setting_refused),
      RECORD_CASE_TEST(test_hang_without_driver_said),
      RECORD_CASE_TEST(test_hang_burst_event_each),
      RECORD_CASE_TEST(test_hang_streams_event_each),
      RECORD_CASE_TEST(test_hang_after_completed_work),
      RECORD_CASE_TEST(test_hang_idle_burst_event_each),
      RECORD_CASE_TEST(test_hang_dump_in_forked_child),
  };
  return cmocka_run_group_tests_name("record-hang", tests, NULL, NULL);
}
