/* What the recorder tests share (test_recorder.c, test_record_safety.c, test_record_hang.c,
 * test_record_shapes.c): one run of the interposed program recording into a fresh directory,
 * described by a record_case, and the checks of what it printed and dumped, read from the same
 * case. A case that needs nothing more is a cmocka test by itself (RECORD_CASE_TEST). */
#ifndef NCCLSHIM_TEST_RECORD_CASE_H
#define NCCLSHIM_TEST_RECORD_CASE_H

#include "dropin_tests.h"

/* Audit mode: an auditor's namespace would get a second copy of the sanitizer's runtime. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef SANITIZED
#define SKIP_UNDER_SANITIZER() skip()
#else
#define SKIP_UNDER_SANITIZER() (void)0
#endif

/* Lines of `text` that hold each of a, b and c ("" matches every line). */
int lines(const char *text, const char *a, const char *b, const char *c);

/* `count` lines hold every one of the needles (those left NULL: no condition). */
typedef struct line_count {
  const char *needles[3];
  int count;
} line_count;

/* One run of tests/dropin/interposed with the recorder on, and what it must show. */
typedef struct record_case {
  const char *args[4]; /* the program's scenario and its arguments */
  /* Settings added to the environment, after NCCLSHIM_RECORD=100 and NCCLSHIM_RECORD_DIR=a
   * fresh directory, each left out when a setting of the same name is given here (qemu-user,
   * the aarch64 job's wrapper, keeps only the last entry of a name). */
  const char *env[3];
  int cuda;  /* with the fake driver (tests/fakes) as the program's libcuda */
  int audit; /* the drop-in as LD_AUDIT instead of LD_PRELOAD (skipped under a sanitizer) */
  /* Skipped under a cross build's exe_wrapper: qemu-user (7.2) aborts when a forked child of
   * a threaded process starts a thread (qemu_plugin_vcpu_init_hook: assertion failed), and
   * runs vfork() as a plain fork (the child does not share its parent's memory). */
  int native;
  /* What run_record_case checks: the exit status; the values of keys the program printed;
   * counts of lines in its output and in its one dump (no rows: no dump is read); the
   * entries the directory holds at the end (0: not checked). */
  int exit_code;
  const char *values[3][2];
  line_count output[3];
  line_count dump[10];
  int entries;
} record_case;

/* Run the case's program (no checks); returns the directory it recorded into: the case's
 * NCCLSHIM_RECORD_DIR, or a scratch_dir() (kept for the test's life, as scratch_dir's are). */
const char *record_run(scenario *s, const record_case *c);
/* Every count of `rows` (up to the first without needles) holds in `text`; a failure shows
 * the row and `text`. */
void expect_lines(const char *text, const line_count *rows, size_t size);
/* Every file of `dir` but those named with a leading dot, one after the other (malloc'd; at
 * most 64 KiB in all, a few dumps). */
char *all_dumps(const char *dir);
/* Entries of `dir` other than . and .. */
int dir_entries(const char *dir);
/* The cmocka test of a record_case (its initial state): run it and check all it says. */
void run_record_case(void **state);

/* The cmocka test `name`, a static const record_case of that name. */
#define RECORD_CASE_TEST(name) \
  { #name, run_record_case, NULL, NULL, (void *)&name }
#define EXPECT_LINES(text, rows) expect_lines(text, rows, sizeof(rows) / sizeof(rows[0]))

/* Needles that many cases use. */
#define AT_EXIT "NCCLSHIM_RECORD_AT_EXIT=1"
#define DUMP_ON_USR1 "NCCLSHIM_RECORD_SIGNAL=USR1"
#define WROTE "ncclshim recorder: wrote "
#define CALL_LINE "\"kind\":\"call\""
#define COMM_LINE "\"kind\":\"comm\""
#define HEADER_LINE "\"kind\":\"header\""
#define NUMBER(n) NUMBER_TEXT(n) /* a number (a signal's) as a string */
#define NUMBER_TEXT(n) #n

#endif
