/* ns per call of a no-op NCCL function (ncclGroupStart of noop_nccl.c), reached four ways
 * (and, linked directly and through the drop-in, of a device-API host function returning a
 * struct by value, ncclTeamWorld: "direct-team", "dropin-team"):
 *   direct   the program is linked with the library            (build: -DDIRECT)
 *   dlsym    a pointer from dlopen + dlsym of the same file
 *   table    ncclshim's table (an explicit handle on that file)
 *   dropin   the program is linked with libncclshim-nccl        (build: -DDROPIN)
 *   call_cost LIBRARY CALLS REPS   prints CSV: way,calls,rep,ns_per_call */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NCCLSHIM_DECLARE_DEVICE_API /* ncclTeamWorld, as the drop-in exports it */
#include "ncclshim/ncclshim.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define TIME_LOOP(way, calls, reps, call)                                             \
  for (int rep = 0; rep < (reps); rep++) {                                            \
    double t0 = now_ns();                                                             \
    for (long i = 0; i < (calls); i++) call;                                          \
    double t1 = now_ns();                                                             \
    printf("%s,%ld,%d,%.4f\n", way, (long)(calls), rep, (t1 - t0) / (double)(calls)); \
  }

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s LIBRARY CALLS REPS\n", argv[0]);
    return 2;
  }
  const char *library = argv[1];
  long calls = atol(argv[2]);
  int reps = atoi(argv[3]);
#if defined(DIRECT)
  (void)library;
  TIME_LOOP("direct", calls, reps, ncclGroupStart());
  TIME_LOOP("direct-team", calls, reps, ncclTeamWorld(NULL));
#elif defined(DROPIN)
  (void)library;    /* NCCLSHIM_NCCL_LIBRARY names it */
  ncclGroupStart(); /* the first call loads */
  TIME_LOOP("dropin", calls, reps, ncclGroupStart());
  TIME_LOOP("dropin-team", calls, reps, ncclTeamWorld(NULL));
#else
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  ncclResult_t (*raw)(void) = (ncclResult_t(*)(void))(uintptr_t)dlsym(handle, "ncclGroupStart");
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = library;
  ncclshim_nccl *nccl = NULL;
  if (raw == NULL || ncclshim_nccl_open(&options, &nccl) != NCCLSHIM_OK) {
    fprintf(stderr, "cannot load %s: %s\n", library, ncclshim_last_error());
    return 1;
  }
  const ncclshim_nccl_table *table = ncclshim_nccl_functions(nccl);
  /* Interleaved, so that both see the same machine state. */
  for (int rep = 0; rep < reps; rep++) {
    TIME_LOOP("dlsym", calls, 1, raw());
    TIME_LOOP("table", calls, 1, table->ncclGroupStart());
  }
#endif
  return 0;
}
