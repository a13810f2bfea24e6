/* The recorder with a CUDA driver (the fake of tests/fakes): operations on a capturing
 * stream are marked "captured"; NCCLSHIM_RECORD_HANG_MS dumps once, reason "hang", when an
 * operation's event has not completed in time, with one line on stderr; captured operations
 * get no event, and with the setting off no event is recorded at all; operations on one
 * stream share events. */
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

/* A hang found behind events that operations shared: the first all-reduce's, named alone. */
#define SHARED_HANG_CASE(scenario, events)                                          \
  {                                                                                 \
    .args = {scenario}, .env = {"NCCLSHIM_RECORD_HANG_MS=100"}, .cuda = 1,          \
    .values = {{"dumped", "1"}, {"events_recorded", events}},                       \
    .output = {{{WROTE, "(hang: ncclAllReduce #1 not complete after 100 ms)"}, 1}}, \
  }

/* Operations share events: behind a held stream's first event, the other 999 wait for a
 * later one and record none. */
static const record_case test_hang_burst_shares_one_event = SHARED_HANG_CASE("heldburst", "1");
/* Each stream shares on its own: two streams taking turns, an event each. */
static const record_case test_hang_streams_share_apart = SHARED_HANG_CASE("alternate", "2");

/* The first event completes, the work after it does not: those that waited get an event
 * from the checking thread (or the next all-reduce's), and the hang is found among them,
 * the line naming the first of them (and the last, when they shared the event). */
static const record_case test_hang_among_waiting_operations = {
    .args = {"lateheld"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=100"},
    .cuda = 1,
    .values = {{"dumped", "1"}, {"events_at_most_3", "1"}},
    .output = {{{WROTE, "(hang: ncclAllReduce #2"}, 1}},
};

/* Events that complete at once still leave the queue only at the thread's pace, so that a
 * burst shares them: no cuEventRecord per call where the GPU keeps up. */
static const record_case test_hang_idle_burst_shares = {
    .args = {"idleburst"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=60000"},
    .cuda = 1,
    .values = {{"events_at_most_3", "1"}},
};

/* A forked child forgets its parent's events and thread (pthread_atfork tells it, with no
 * getpid() per call) and dumps by a thread of its own. */
static const record_case test_hang_dump_in_forked_child = {
    .args = {"forkhang"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=100"},
    .cuda = 1,
    .native = 1,
    .values = {{"child_dumped", "1"}},
    .output = {{{WROTE, "(hang: ncclAllReduce #2 not complete after 100 ms)"}, 1}},
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
      RECORD_CASE_TEST(test_hang_burst_shares_one_event),
      RECORD_CASE_TEST(test_hang_streams_share_apart),
      RECORD_CASE_TEST(test_hang_among_waiting_operations),
      RECORD_CASE_TEST(test_hang_idle_burst_shares),
      RECORD_CASE_TEST(test_hang_dump_in_forked_child),
  };
  return cmocka_run_group_tests_name("record-hang", tests, NULL, NULL);
}
