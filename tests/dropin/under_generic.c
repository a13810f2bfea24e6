/* The NCCL under the drop-in in the interposer tests (with under_nccl.c): a libnccl.so.2 that
 * a test program links directly. Here every function of the list, weak, counting its calls
 * and returning ncclSuccess (or what under_fail chose); under_nccl.c replaces a few. */
#include <string.h>

#include "under.h"

#define NAME_(name, version, policy, role, returns, n, params) #name,
static const char *const names[] = {NCCLSHIM_NCCL_FUNCTIONS(NAME_)};
static int calls[NCCLSHIM_NCCL_FUNCTION_COUNT];
static int failing[NCCLSHIM_NCCL_FUNCTION_COUNT];

static int index_of(const char *function) {
  for (int i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++)
    if (strcmp(names[i], function) == 0) return i;
  return -1;
}

UNDER_EXPORT int under_calls(const char *function) {
  int i = index_of(function);
  return i < 0 ? -1 : __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
}

UNDER_EXPORT void under_fail(const char *function, int result) {
  int i = index_of(function);
  if (i >= 0) __atomic_store_n(&failing[i], result, __ATOMIC_RELAXED);
}

/* Count the call; what it returns (the failure chosen, once). Atomic: the threads scenario
 * calls from 8 threads at once. */
ncclResult_t under_answer(int fn) {
  __atomic_fetch_add(&calls[fn], 1, __ATOMIC_RELAXED);
  return (ncclResult_t)__atomic_exchange_n(&failing[fn], ncclSuccess, __ATOMIC_RELAXED);
}

#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DONE_RESULT(name) return under_answer(NCCLSHIM_FN_##name);
#define DONE_STRING(name)           \
  under_answer(NCCLSHIM_FN_##name); \
  return "under NCCL string";
#define DONE_VOID(name) under_answer(NCCLSHIM_FN_##name);
#define DONE_INT(name) return (int)under_answer(NCCLSHIM_FN_##name);
#define DONE_TEAM(name)             \
  under_answer(NCCLSHIM_FN_##name); \
  return (ncclshim_team_t){0, 0, 0};
#define WEAK_(name, version, policy, role, returns, n, params)                                   \
  UNDER_EXPORT __attribute__((weak)) NCCLSHIM_RETURNS(returns) name NCCLSHIM_PP_PARAMS(n,        \
                                                                                       params) { \
    DONE_##returns(name)                                                                         \
  }
NCCLSHIM_NCCL_FUNCTIONS(WEAK_)
