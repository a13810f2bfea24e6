/* What every harness defines (libFuzzer's entry points), and a check that stops the run with
 * a message: libFuzzer saves the input that reached it as a crash. */
#ifndef NCCLSHIM_FUZZ_H
#define NCCLSHIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                            \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "fuzz check failed: %s: ", #cond); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, "\n");                             \
      abort();                                           \
    }                                                    \
  } while (0)

/* The input as a NUL-terminated string (cut at its first NUL); malloc'd. */
char *fuzz_string(const uint8_t *data, size_t size);

/* The input as a file, for the code that reads a path: one memfd (named `name`), made at the
 * first call, its contents replaced by each input. Returns its path (/proc/self/fd/N). */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* The outcome of an ELF reader (loader/outcome.h): OK or UNLOADABLE, and on UNLOADABLE a reason
 * in reason[0..size) (which the caller filled with 'x' before the call) that is terminated and
 * not empty. */
void fuzz_check_outcome(int status, const char *reason, size_t size);

#endif
