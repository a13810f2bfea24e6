/* NCCL's result codes: the name and NCCL's own text of every value a release has used
 * (ncclGetErrorString in NCCL's src/init.cc; docs/nccl-abi.md, section 2). */
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
