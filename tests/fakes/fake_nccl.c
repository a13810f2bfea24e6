/* A fake libnccl.so.2, generated from ncclshim's function list. Each function records the
 * bytes of every argument it receives and returns a value the test chose, so tests prove that
 * calls through ncclshim arrive unchanged. The functions exported by one variant are chosen
 * by a version script (gen_fake_map.c); ncclGetVersion's behaviour by FAKE_VERSION_MODE. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "fake_nccl.h"
#include "ncclshim/nccl_functions.h"

#ifndef FAKE_VERSION_CODE
#error "FAKE_VERSION_CODE must be set"
#endif
#define FAKE_VERSION_NORMAL 0
#define FAKE_VERSION_FAILS 1    /* returns ncclSystemError */
#define FAKE_VERSION_ZERO 2     /* writes 0 */
#define FAKE_VERSION_NEGATIVE 3 /* writes -5 */
#define FAKE_VERSION_SILENT 4   /* succeeds, writes nothing */
#ifndef FAKE_VERSION_MODE
#define FAKE_VERSION_MODE FAKE_VERSION_NORMAL
#endif

#define EXPORT __attribute__((visibility("default")))

static fake_nccl_call last;
static int next_result = ncclSuccess;
static atomic_int version_calls;
static atomic_int all_calls;

EXPORT const fake_nccl_call *fake_nccl_last_call(void) { return &last; }
EXPORT void fake_nccl_set_result(int result) { next_result = result; }
EXPORT int fake_nccl_version_calls(void) { return atomic_load(&version_calls); }
EXPORT int fake_nccl_calls(void) { return atomic_load(&all_calls); }

static void begin(const char *function) {
  atomic_fetch_add(&all_calls, 1);
  memset(&last, 0, sizeof(last));
  strncpy(last.function, function, sizeof(last.function) - 1);
  last.version_code = FAKE_VERSION_CODE;
}

static void record(const void *arg, size_t size) {
  if (last.nargs >= FAKE_MAX_ARGS) return;
  last.size[last.nargs] = size;
  memcpy(last.bytes[last.nargs], arg, size < FAKE_MAX_ARG_BYTES ? size : FAKE_MAX_ARG_BYTES);
  last.nargs++;
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
  atomic_fetch_add(&version_calls, 1);
  if (version == NULL) return ncclInvalidArgument;
  switch (FAKE_VERSION_MODE) {
  case FAKE_VERSION_FAILS:
    return ncclSystemError;
  case FAKE_VERSION_ZERO:
    *version = 0;
    break;
  case FAKE_VERSION_NEGATIVE:
    *version = -5;
    break;
  case FAKE_VERSION_SILENT:
    break;
  default:
    *version = FAKE_VERSION_CODE;
    break;
  }
  return ncclSuccess;
}
EXPORT ncclResult_t pncclGetVersion(int *version) __attribute__((alias("ncclGetVersion")));

/* Calls one of its own public names the way NCCL does, through the dynamic symbol table, and
 * returns the address that call went to (the drop-in's, when the drop-in is global). */
EXPORT void *fake_nccl_call_self(void) {
  ncclGroupStart();
  return (void *)(uintptr_t)&ncclGroupStart;
}

static const char fake_string[] = "fake NCCL string";

#define RECORD_(type, name) record(&name, sizeof(name));
#define FINISH_RESULT return (ncclResult_t)next_result;
#define FINISH_STRING return fake_string;
#define FINISH_VOID
#define FAKE_(name, version, policy, returns, n, params)                 \
  EXPORT NCCLSHIM_RETURNS(returns)                                       \
  name NCCLSHIM_PP_PARAMS(n, params) {                                   \
    begin(#name);                                                        \
    NCCLSHIM_PP_EACH(n, RECORD_, params)                                 \
    FINISH_##returns                                                     \
  }                                                                      \
  EXPORT NCCLSHIM_RETURNS(returns) p##name NCCLSHIM_PP_PARAMS(n, params) \
      __attribute__((alias(#name)));

/* Every row but ncclGetVersion, which is written out above: PROBE_ turns that one name into
 * "~, 1," so that SECOND picks 1 for it and 0 for every other name. */
#define PROBE_ncclGetVersion ~, 1,
#define SECOND(a, b, ...) b
#define SECOND_(...) SECOND(__VA_ARGS__)
#define IS_GET_VERSION(name) SECOND_(PROBE_##name, 0, ~)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define GENERATE_0(...) FAKE_(__VA_ARGS__)
#define GENERATE_1(...)
#define GENERATE_(name, ...) CAT(GENERATE_, IS_GET_VERSION(name))(name, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(GENERATE_)
