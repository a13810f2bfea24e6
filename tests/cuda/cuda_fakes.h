/* Access to the fake drivers (fake_cuda.c) from the tests. */
#ifndef NCCLSHIM_TEST_CUDA_FAKES_H
#define NCCLSHIM_TEST_CUDA_FAKES_H

#include "fake_cuda.h"
#include "ncclshim/cuda.h"

/* Absolute path of fake variant "13.0", "stub", ... (malloc'd; tests are short-lived). */
char *cuda_fake_path(const char *variant);
/* The fake's log and knobs, through its own handle: it must already be loaded. */
fake_cuda_log *cuda_fake_log(const char *path);
fake_cuda_control *cuda_fake_control(const char *path);
/* Empty the fake's log, if it is loaded (a fresh load has an empty log anyway). */
void cuda_fake_reset(const char *path);
/* How many times the fake's function exported as `name` was called. */
int cuda_fake_calls(const char *path, const char *name);
/* In a cmocka test: `cuda` is marked as a stub, and `text` (its message, or the last error)
 * names the file `path` and says `why`. */
void expect_stub(const ncclshim_cuda *cuda, const char *text, const char *path, const char *why);
/* In a cmocka test: `path` opened explicitly, which must give `expected`; */
ncclshim_cuda *cuda_opened(const char *path, ncclshim_status expected);
/* the same with fake `variant`, whose path *path (may be NULL) gets. */
ncclshim_cuda *cuda_fake_opened(const char *variant, ncclshim_status expected, char **path);
/* Open fake `variant` by explicit path; *path (may be NULL) gets its path. */
ncclshim_status cuda_open_fake(const char *variant, ncclshim_cuda **cuda, char **path);

#endif
