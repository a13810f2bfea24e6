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

#endif
