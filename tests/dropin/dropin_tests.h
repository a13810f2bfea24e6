/* The drop-in test program's groups (one test, 'dropin', so that CI's lists name it once). */
#ifndef NCCLSHIM_TEST_DROPIN_TESTS_H
#define NCCLSHIM_TEST_DROPIN_TESTS_H

#include "support.h"

int run_interpose_tests(void);
int run_recorder_tests(void);
int run_record_safety_tests(void);
int run_record_hang_tests(void);
int run_record_shapes_tests(void);
int run_record_evidence_tests(void);

/* run_program, with the program's stderr (what it writes before its main() merges it into
 * stdout) added at the end of its output. */
void run_captured(scenario *s, const char *program, const char *const *args,
                  const char *const *env);

/* Run tests/dropin/interposed (its path in $INTERPOSED) with `what` and these arguments,
 * the drop-in in LD_PRELOAD unless preload is 0, and `extra` added to the environment. */
void run_interposed(scenario *s, int preload, const char *const *args, const char *const *extra);
/* Dumps (ncclshim-record-*) in `dir`. */
int dump_count(const char *dir);
/* The one dump in `dir` (malloc'd contents; its name in *name when name is not NULL). */
char *read_dump(const char *dir, char **name);
/* Lines of `text` that contain every one of the NULL-terminated needles. */
int count_lines(const char *text, const char *const *needles);

#endif
