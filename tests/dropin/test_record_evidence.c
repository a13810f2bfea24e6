/* What a dump keeps and whose it is: a hang's evidence survives the dumps that follow it (the
 * program's abort, the launcher's signal, exit); a vfork child, which shares its parent's
 * memory, changes nothing of the parent's recorder; LD_AUDIT with LD_PRELOAD records each
 * call once, in one dump, however it was bound; the settings' names and blanks. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "record_case.h"

#define STUCK "\"stuck_call\":3,\"stuck_function\":\"ncclAllReduce\",\"stuck_comm_id\":\""

/* The hang dump, then the exit dump over it: the last file still names the stuck call, its
 * communicator, sequence number and rank. */
static const record_case test_hang_kept_by_later_dump = {
    .args = {"hang"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=100", AT_EXIT},
    .cuda = 1,
    .values = {{"dumped", "1"}},
    .output = {{{WROTE, "(hang: ncclAllReduce #3 not complete after 100 ms)"}, 1}, {{WROTE}, 2}},
    .dump = {{{HEADER_LINE, "\"reason\":\"exit\"", "\"hang_ms\":100,"}, 1},
             {{HEADER_LINE, STUCK, "\"stuck_seq\":3,\"stuck_rank\":0,"}, 1}},
    .entries = 1,
};

/* The vfork child dumps on the signal it got (a file of its own: no call, no communicator);
 * the parent's dump after it is the parent's, whole. */
static void test_vfork_child_leaves_parent(void **state) {
  (void)state;
  scenario s;
  const char *dir = record_run(&s, &(record_case){.args = {"vfork"}, .env = {DUMP_ON_USR1}});
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "child_status"), "0");
  assert_int_equal(dump_count(dir), 2);
  char *all = all_dumps(dir);
  const line_count rows[] = {{{HEADER_LINE, "\"forked\":true", "\"calls\":0,"}, 1},
                             {{HEADER_LINE, "\"rank\":0,", "\"calls\":3,"}, 1},
                             {{HEADER_LINE, "\"forked\""}, 1},
                             {{COMM_LINE, "\"last_seq\":2,"}, 1},
                             {{CALL_LINE}, 3}};
  EXPECT_LINES(all, rows);
  free(all);
}

/* A vfork child that ends by exit() runs the library's destructor in its parent's memory:
 * no exit dump of its own, and the parent's dump on the signal is whole. (The loader's own
 * state is shared too: the parent's exit finds the destructors run, and dumps no more.) Not
 * under qemu-user, whose vfork is a fork: the parent's exit dump would follow. */
static const record_case test_vfork_exit_leaves_parent = {
    .args = {"vforkexit"},
    .env = {DUMP_ON_USR1, AT_EXIT},
    .native = 1,
    .values = {{"child_status", "0"}},
    .dump = {{{HEADER_LINE, "\"reason\":\"signal\"", "\"calls\":3,"}, 1},
             {{HEADER_LINE, "\"forked\""}, 0},
             {{COMM_LINE, "\"last_seq\":2,"}, 1},
             {{CALL_LINE}, 3}},
    .entries = 1,
};

/* LD_AUDIT and LD_PRELOAD together, one call bound by dlsym on NCCL's own handle: one dump,
 * every call in it, and one dump per signal. */
static void test_audit_with_preload_one_dump(void **state) {
  (void)state;
  SKIP_UNDER_SANITIZER();
  scenario s;
  char *both = scratch_dir();
  const char *args[] = {"handle", "2", NULL};
  const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")), "NCCLSHIM_RECORD=100",
                       env_entry("NCCLSHIM_RECORD_DIR", both), DUMP_ON_USR1, NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "handle_result"), "0");
  assert_int_equal(dump_count(both), 1);
  char *dump = read_dump(both, NULL);
  const line_count rows[] = {{{HEADER_LINE, "\"calls\":4,"}, 1},
                             {{COMM_LINE, "\"last_seq\":3,"}, 1},
                             {{CALL_LINE, "\"function\":\"ncclAllReduce\"", "\"seq\":3,"}, 1}};
  EXPECT_LINES(dump, rows);
  free(dump);
}

/* SIGSTKFLT and SIGRTMIN+n by name, as by number: the signal dumps, then ends the process.
 * qemu-user (7.2, a cross build's exe_wrapper) never delivers the target's two highest
 * signals (their sigaction succeeds, raise does nothing): RTMAX-2 there, RTMAX-1 natively. */
static void test_signal_names(void **state) {
  (void)state;
  char realtime[64], highest[64], number[16];
  const char *wrapper[8];
  int below_max = test_wrapper_words(wrapper, 8) > 0 ? 2 : 1;
  snprintf(realtime, sizeof(realtime), "NCCLSHIM_RECORD_SIGNAL=SIGRTMIN+%d", 2);
  snprintf(highest, sizeof(highest), "NCCLSHIM_RECORD_SIGNAL=RTMAX-%d", below_max);
  const struct {
    const char *setting;
    int signo;
  } named[] = {{"NCCLSHIM_RECORD_SIGNAL=SIGSTKFLT", SIGSTKFLT},
               {"NCCLSHIM_RECORD_SIGNAL=stkflt", SIGSTKFLT},
               {realtime, SIGRTMIN + 2},
               {highest, SIGRTMAX - below_max}};
  for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
    scenario s;
    snprintf(number, sizeof(number), "%d", named[i].signo);
    const char *dir =
        record_run(&s, &(record_case){.args = {"raise", number}, .env = {named[i].setting}});
    if (lines(s.output, "stays off", "", "") != 0 || dump_count(dir) != 1)
      fail_msg("%s: %d dumps:\n%s", named[i].setting, dump_count(dir), s.output);
    assert_int_equal(s.exit_code, 128 + named[i].signo);
  }
  const char *refused[] = {"NCCLSHIM_RECORD_SIGNAL=RTMIN+99", "NCCLSHIM_RECORD_SIGNAL=RTMIN-1",
                           "NCCLSHIM_RECORD_SIGNAL=RTMAX+1"};
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    scenario s;
    record_run(&s, &(record_case){.args = {"error"}, .env = {refused[i]}});
    if (lines(s.output, refused[i], ": not a signal name", "the recorder stays off") != 1)
      fail_msg("%s not refused:\n%s", refused[i], s.output);
  }
}

/* Blanks around NCCLSHIM_RECORD_HANG_MS's number are ignored, as NCCLSHIM_RECORD's are: the
 * recorder stays on and the hang dump watches the idle stream's operation. */
static const record_case test_hang_ms_blanks = {
    .args = {"captured"},
    .env = {"NCCLSHIM_RECORD_HANG_MS= 60000 "},
    .cuda = 1,
    .values = {{"events_recorded", "1"}},
    .output = {{{"stays off"}, 0}},
};

/* Only blanks: unset. */
static const record_case test_hang_ms_only_blanks = {
    .args = {"captured"},
    .env = {"NCCLSHIM_RECORD_HANG_MS=  ", AT_EXIT},
    .cuda = 1,
    .values = {{"events_recorded", "0"}},
    .output = {{{"stays off"}, 0}, {{WROTE}, 1}},
};

int run_record_evidence_tests(void) {
  const struct CMUnitTest tests[] = {
      RECORD_CASE_TEST(test_hang_kept_by_later_dump),
      cmocka_unit_test(test_vfork_child_leaves_parent),
      RECORD_CASE_TEST(test_vfork_exit_leaves_parent),
      cmocka_unit_test(test_audit_with_preload_one_dump),
      cmocka_unit_test(test_signal_names),
      RECORD_CASE_TEST(test_hang_ms_blanks),
      RECORD_CASE_TEST(test_hang_ms_only_blanks),
  };
  return cmocka_run_group_tests_name("recorder evidence", tests, NULL, NULL);
}
