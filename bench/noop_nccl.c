/* A libnccl.so.2 whose functions do nothing and return ncclSuccess (ncclGetVersion answers
 * 2.28.9): the callee for the call-cost benchmark, so that only the cost of reaching it is
 * measured. Generated from ncclshim's function list. */
#include "ncclshim/nccl_functions.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}

#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DONE_RESULT return ncclSuccess;
#define DONE_STRING return "";
#define DONE_VOID
#define DONE_INT return 0;
#define DONE_TEAM return (ncclshim_team_t){0, 0, 0};
#define NOOP_(name, version, policy, returns, n, params) \
  EXPORT NCCLSHIM_RETURNS(returns)                       \
  name NCCLSHIM_PP_PARAMS(n, params) { DONE_##returns }
/* Every row but ncclGetVersion (above). */
#define PROBE_ncclGetVersion ~, 1,
#define GENERATE_0(...) NOOP_(__VA_ARGS__)
#define GENERATE_1(...)
#define GENERATE_(name, ...) \
  NCCLSHIM_PP_CAT(GENERATE_, NCCLSHIM_PP_SELECT(PROBE_##name, 0))(name, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(GENERATE_)
