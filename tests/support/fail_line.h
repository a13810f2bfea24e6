/* The failure check of the plain C programs, those without cmocka: the GPU benchmarks and
 * jobs (bench/gpu/, tests/gpu/comm/, tests/gpu/dropin/), whose ranks share stderr, and the
 * hardening stress tests. Header-only: each program builds it in with nothing else of the tests.
 *   CHECK_OR(LEAVE, WHO, N, OK, FORMAT, ...)
 * unless OK, writes one line "WHO N: message" to stderr in one call (two ranks' lines do not
 * interleave), then runs LEAVE, the statement that ends the caller: exit(1), _exit(1) in a
 * forked child, return 1 from a round. */
#ifndef NCCLSHIM_TEST_FAIL_LINE_H
#define NCCLSHIM_TEST_FAIL_LINE_H

#include <stdio.h>

#define CHECK_OR(leave, who, n, ok, ...)             \
  do {                                               \
    if (!(ok)) {                                     \
      char line_[768];                               \
      snprintf(line_, sizeof(line_), __VA_ARGS__);   \
      fprintf(stderr, "%s %d: %s\n", who, n, line_); \
      leave;                                         \
    }                                                \
  } while (0)

#endif
