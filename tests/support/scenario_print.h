/* What the search scenario helpers (tests/cuda/cuda_scenario.c, tests/nccl/nccl_scenario.c)
 * share: their --preload argument (read by support.c's scenario_options) and the attempt lines
 * that support.c's run_scenario callers read. */
#ifndef NCCLSHIM_TEST_SCENARIO_PRINT_H
#define NCCLSHIM_TEST_SCENARIO_PRINT_H

#include <dlfcn.h>
#include <stdio.h>

#include "ncclshim/status.h"

/* dlopen `path` before the search, as --preload asks: 0, or the helper's exit code 3 after
 * printing "preload_error=...". */
static inline int scenario_preload(const char *path) {
  if (dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL) return 0;
  printf("preload_error=%s\n", dlerror());
  return 3;
}

/* "attempt.<i>=<how>|<result>|<candidate>|<reason>" */
static inline void scenario_print_attempt(size_t i, const ncclshim_attempt *a) {
  printf("attempt.%zu=%s|%s|%s|%s\n", i, ncclshim_found_via_name(a->how),
         ncclshim_status_name(a->result), a->candidate, a->reason);
}

#endif
