/* Named values of NCCL's ABI, compared between the real nccl.h and ncclshim's header. */
#ifndef NCCLSHIM_ABI_VALUES_H
#define NCCLSHIM_ABI_VALUES_H

#include <stddef.h>

typedef struct abi_value {
  const char *name;
  long long value;
} abi_value;

#define ABI_VALUE(x) {#x, (long long)(x)},
#define ABI_OFFSET(type, field) {#type "." #field, (long long)offsetof(type, field)},
#define ABI_SIZE(type) {"sizeof(" #type ")", (long long)sizeof(type)},

/* clang-format off */
/* Present in every nccl.h from 2.18 (ncclBfloat16 only in C++ before 2.24: abi_real.c). */
#define ABI_COMMON(X)                                                                              \
  X(ncclSuccess)                                                                                   \
  X(ncclUnhandledCudaError) X(ncclSystemError) X(ncclInternalError) X(ncclInvalidArgument)         \
      X(ncclInvalidUsage) X(ncclRemoteError) X(ncclInProgress) X(ncclInt8) X(ncclChar)             \
          X(ncclUint8) X(ncclInt32) X(ncclInt) X(ncclUint32) X(ncclInt64) X(ncclUint64)            \
              X(ncclFloat16) X(ncclHalf) X(ncclFloat32) X(ncclFloat) X(ncclFloat64) X(ncclDouble)  \
                  X(ncclSum) X(ncclProd) X(ncclMax) X(ncclMin) X(ncclAvg)          \
                      X(ncclNumOps) X(ncclMaxRedOp) X(ncclScalarDevice) X(ncclScalarHostImmediate) \
                          X(NCCL_UNIQUE_ID_BYTES) X(NCCL_CONFIG_UNDEF_INT) X(NCCL_SPLIT_NOCOLOR)   \
                              X(sizeof(ncclResult_t)) X(sizeof(ncclDataType_t))                    \
                                  X(sizeof(ncclRedOp_t)) X(sizeof(ncclUniqueId))                   \
                                      X(sizeof(ncclComm_t)) X(sizeof(cudaStream_t))

#ifdef __cplusplus
extern "C" {
#endif
/* ncclshim's values, from abi_ours.c; NULL-terminated. */
extern const abi_value ours[];
/* The checks, each returning its number of mismatches (abi_main.c runs them). */
int abi_check_values_c(void);
int abi_check_values_cxx(void);
int abi_check_signatures(void);
#ifdef __cplusplus
}
#endif

/* clang-format on */

#endif
