/* How late a bounded wait notices completion, and the CPU it burns meanwhile.
 *
 * The callee is bench/timed_nccl.c, whose ncclCommGetAsyncError says ncclInProgress until a
 * time set here. For each duration D, the work is made to finish D after the wait starts;
 * ncclshim_nccl_wait polls it, and the overshoot is its return time minus the moment the
 * work finished. The goal is overshoot <= max(2 us, 5 % of D). CPU is the
 * thread's CPU time over the wait's wall time (1.0: a core busy throughout).
 *   wait_cost LIBRARY REPS     prints CSV: wait_us,rep,overshoot_ns,cpu
 * NCCLSHIM_WAIT_SPIN_US (read by the library) selects the pacing under test. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ncclshim/comm.h"

static int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY REPS\n", argv[0]);
    return 2;
  }
  int reps = atoi(argv[2]);
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = argv[1];
  ncclshim_nccl *nccl = NULL;
  if (ncclshim_nccl_open(&options, &nccl) != NCCLSHIM_OK) {
    fprintf(stderr, "wait_cost: %s\n", ncclshim_last_error());
    return 1;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  volatile int64_t *done = lib ? dlsym(lib, "timed_nccl_done_ns") : NULL;
  if (done == NULL) {
    fprintf(stderr, "wait_cost: %s has no timed_nccl_done_ns\n", argv[1]);
    return 1;
  }
  static const int64_t waits_us[] = {1,   2,    5,    10,   20,    50,    100,   200,
                                     500, 1000, 2000, 5000, 10000, 30000, 100000};
  ncclComm_t comm = (ncclComm_t)(uintptr_t)1; /* the fake never looks at it */
  printf("wait_us,rep,overshoot_ns,cpu\n");
  for (int rep = 0; rep < reps; rep++) {
    for (size_t i = 0; i < sizeof(waits_us) / sizeof(waits_us[0]); i++) {
      if (waits_us[i] >= 30000 && rep % 10 != 0) continue; /* long waits: fewer reps */
      int64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
      *done = t0 + waits_us[i] * 1000;
      ncclshim_status status = ncclshim_nccl_wait(nccl, comm, 10000);
      int64_t t1 = clock_ns(CLOCK_MONOTONIC), cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      if (status != NCCLSHIM_OK) {
        fprintf(stderr, "wait_cost: %s\n", ncclshim_last_error());
        return 1;
      }
      printf("%lld,%d,%lld,%.3f\n", (long long)waits_us[i], rep, (long long)(t1 - *done),
             (double)(cpu1 - cpu0) / (double)(t1 - t0));
    }
  }
  ncclshim_nccl_close(nccl);
  return 0;
}
