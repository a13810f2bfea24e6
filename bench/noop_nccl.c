/* A libnccl.so.2 whose functions do nothing and return ncclSuccess (ncclGetVersion answers
 * 2.28.9): the callee for the call-cost benchmark, so that only the cost of reaching it is
 * measured. Generated from ncclshim's function list. */
#include "ncclshim/nccl_functions.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}

/* Every row but ncclGetVersion (above). */
#define WRITTEN_ncclGetVersion ~, 1,
#include "noop_rest.h"
