/* ns per call through the drop-in, for the flight recorder's cost: the same program run with
 * NCCLSHIM_RECORD unset (off) and set (on), NCCL being bench/noop_nccl.c (NCCLSHIM_NCCL_LIBRARY).
 * Two calls: ncclAllReduce on a communicator (recorded with its sequence number) and
 * ncclGroupStart (no communicator).
 *   recorder_cost CALLS REPS   prints CSV: recorder,call,calls,rep,ns_per_call */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ncclshim/ncclshim.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CALLS REPS\n", argv[0]);
    return 2;
  }
  long calls = atol(argv[1]);
  int reps = atoi(argv[2]);
  const char *mode = getenv("NCCLSHIM_RECORD") ? "on" : "off";
  ncclComm_t comm = (ncclComm_t)(uintptr_t)0x1000; /* the no-op NCCL never reads it */
  if (ncclGroupStart() != ncclSuccess) {           /* the first call loads */
    fprintf(stderr, "no NCCL: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now_ns();
    for (long i = 0; i < calls; i++)
      ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL);
    double t1 = now_ns();
    for (long i = 0; i < calls; i++) ncclGroupStart();
    double t2 = now_ns();
    printf("%s,ncclAllReduce,%ld,%d,%.3f\n", mode, calls, rep, (t1 - t0) / (double)calls);
    printf("%s,ncclGroupStart,%ld,%d,%.3f\n", mode, calls, rep, (t2 - t1) / (double)calls);
  }
  return 0;
}
