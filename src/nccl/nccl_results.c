/* NCCL's result codes: the name and NCCL's own text of every value a release has used
 * (ncclGetErrorString in NCCL's src/init.cc; docs/nccl-abi.md, section 2). */
#include <pthread.h>
#include <stdint.h>

#include "../internal.h"
#include "ncclshim/ncclshim.h"

/* clang-format off */
static const struct {
  const char *name;
  const char *text;
} results[] = {
  {"ncclSuccess",            "no error"},
  {"ncclUnhandledCudaError", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
  {"ncclSystemError",        "unhandled system error (run with NCCL_DEBUG=INFO for details)"},
  {"ncclInternalError",      "internal error - please report this issue to the NCCL developers"},
  {"ncclInvalidArgument",    "invalid argument (run with NCCL_DEBUG=WARN for details)"},
  {"ncclInvalidUsage",       "invalid usage (run with NCCL_DEBUG=WARN for details)"},
  {"ncclRemoteError",        "remote process exited or there was a network error"},
  {"ncclInProgress",         "NCCL operation in progress"},
  {"ncclTimeout",            "timeout"},
};
/* clang-format on */

int ncclshim_nccl_result_known(int result) {
  return result >= 0 && (size_t)result < sizeof(results) / sizeof(results[0]);
}

const char *ncclshim_nccl_result_name(int result) {
  return ncclshim_nccl_result_known(result) ? results[result].name : "unknown";
}

const char *ncclshim_nccl_result_string(int result) {
  return ncclshim_nccl_result_known(result) ? results[result].text : "unknown result code";
}

/* The thread's last failing result, in the pointer value of a pthread key (no allocation, so
 * nothing to free at thread exit): (code << 1) | 1, NULL when none. */
static pthread_once_t result_once = PTHREAD_ONCE_INIT;
static pthread_key_t result_key;
static int result_key_ok;

static void make_result_key(void) { result_key_ok = pthread_key_create(&result_key, NULL) == 0; }

void ncclshim_nccl_note_result(int result) {
  pthread_once(&result_once, make_result_key);
  if (result_key_ok)
    pthread_setspecific(result_key, (void *)(((uintptr_t)(unsigned)result << 1) | 1u));
}

int ncclshim_last_nccl_result(void) {
  pthread_once(&result_once, make_result_key);
  uintptr_t value = result_key_ok ? (uintptr_t)pthread_getspecific(result_key) : 0;
  return value ? (int)(unsigned)(value >> 1) : 0;
}
