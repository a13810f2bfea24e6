/* NCCL's result codes: the name and NCCL's own text of every value a release has used
 * (ncclGetErrorString in NCCL's src/init.cc; docs/nccl-abi.md, section 2); and the names of
 * its datatypes. */
#include "src/internal.h"
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

/* Each name at its value in nccl_abi.h's ncclDataType_t (whose aliases, ncclChar, ncclInt,
 * ncclHalf, ncclFloat and ncclDouble, share those values); one for every value below
 * ncclNumTypes. */
#define TYPE_(name) [name] = #name
static const char *const type_names[] = {
    TYPE_(ncclInt8),    TYPE_(ncclUint8),    TYPE_(ncclInt32),      TYPE_(ncclUint32),
    TYPE_(ncclInt64),   TYPE_(ncclUint64),   TYPE_(ncclFloat16),    TYPE_(ncclFloat32),
    TYPE_(ncclFloat64), TYPE_(ncclBfloat16), TYPE_(ncclFloat8e4m3), TYPE_(ncclFloat8e5m2),
};
_Static_assert(sizeof(type_names) / sizeof(type_names[0]) == ncclNumTypes,
               "a name for every ncclDataType_t value");

const char *ncclshim_nccl_type_name(ncclDataType_t type) {
  return (unsigned)type < sizeof(type_names) / sizeof(type_names[0]) ? type_names[type]
                                                                     : "unknown type";
}
