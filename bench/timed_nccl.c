/* A libnccl.so.2 whose work finishes at a time the benchmark sets: ncclCommGetAsyncError
 * answers ncclInProgress until CLOCK_MONOTONIC reaches timed_nccl_done_ns, then ncclSuccess.
 * Every other function does nothing and succeeds (ncclGetVersion answers 2.28.9). The callee
 * of bench/wait_cost.c, which measures how late a bounded wait notices completion. */
#include <stdint.h>
#include <time.h>

#include "ncclshim/nccl_functions.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT volatile int64_t timed_nccl_done_ns;

EXPORT ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async) {
  (void)comm;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  *async = now >= timed_nccl_done_ns ? ncclSuccess : ncclInProgress;
  return ncclSuccess;
}

/* Every row but the two above. */
#define WRITTEN_ncclGetVersion ~, 1,
#define WRITTEN_ncclCommGetAsyncError ~, 1,
#include "noop_rest.h"
