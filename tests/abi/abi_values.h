/* Named values of NCCL's ABI, compared between the real nccl.h and ncclshim's header. */
#ifndef NCCLSHIM_ABI_VALUES_H
#define NCCLSHIM_ABI_VALUES_H

#include <stddef.h>
#include <stdint.h>

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

/* New in 2.32.3 (abi_real.c checks them where the real nccl.h is that new). */
#define ABI_FROM_2_32_3(VALUE, SIZE, OFFSET)                                                      \
  VALUE(NCCL_WIN_GIN_ONLY) VALUE(NCCL_WIN_CFT_COUNTED) VALUE(ncclHostCftDefault)                  \
  VALUE(ncclHostCftEnable) VALUE(ncclHostCftDisable) VALUE(ncclHostCftFallback)                   \
  VALUE(sizeof(ncclHostCftMode_t)) VALUE(ncclNvlsHostModeDefault) VALUE(ncclNvlsHostModeEnable)   \
  VALUE(ncclNvlsHostModeDisableTransport) VALUE(ncclNvlsHostModeDisableSymmetricMultimem)         \
  VALUE(ncclNvlsHostModeDisable) VALUE(sizeof(ncclNvlsHostMode_t))                                \
  VALUE(NCCL_ENCRYPTION_MODE_NONE) VALUE(NCCL_ENCRYPTION_MODE_PSK)                                \
  VALUE(sizeof(ncclEncryptionMode_t)) SIZE(ncclCollConfig_t) OFFSET(ncclCollConfig_t, size)       \
  OFFSET(ncclCollConfig_t, magic) OFFSET(ncclCollConfig_t, version) OFFSET(ncclCollConfig_t, ext) \
  OFFSET(ncclCollConfig_t, minCTAs) OFFSET(ncclCollConfig_t, maxCTAs)                             \
  OFFSET(ncclCollConfig_t, nvlsCTAs) OFFSET(ncclCollConfig_t, cgaClusterSize)                     \
  OFFSET(ncclCollConfig_t, algSelection) OFFSET(ncclCollConfig_t, forceAlgSelection)              \
  OFFSET(ncclCollConfig_t, CTAPolicy) OFFSET(ncclCollConfig_t, userProfilerTag)                   \
  OFFSET(ncclCollConfig_t, launchCompletionEvent) SIZE(ncclConfigExt_t)                           \
  OFFSET(ncclConfigExt_t, next) OFFSET(ncclConfigExt_t, key) OFFSET(ncclConfigExt_t, val)         \
  SIZE(ncclEncryptionConfig_t) OFFSET(ncclEncryptionConfig_t, size)                               \
  OFFSET(ncclEncryptionConfig_t, magic) OFFSET(ncclEncryptionConfig_t, version)                   \
  OFFSET(ncclEncryptionConfig_t, mode) OFFSET(ncclEncryptionConfig_t, psk)

/* The initializers of 2.32.3's structs, field by field (pointers as integers), filled at run
 * time by ABI_DEFINE_INITIALIZERS(function) in the translation unit whose types are in force.
 * `version` is left out: the real header writes its own release, ncclshim its layout's. */
#define ABI_INIT_FIELD_(var, type, field)           \
  out[n].name = "init " #type "." #field;           \
  out[n++].value = (long long)(intptr_t)(var).field;
#define ABI_COLL_INIT_(field) ABI_INIT_FIELD_(coll, ncclCollConfig_t, field)
#define ABI_ENCRYPTION_INIT_(field) ABI_INIT_FIELD_(encryption, ncclEncryptionConfig_t, field)
#define ABI_CONFIG_INIT_(id, field, kind, version) ABI_INIT_FIELD_(config, ncclConfig_t, field)
#define ABI_DEFINE_INITIALIZERS(function)                                                    \
  int function(abi_value *out) {                                                             \
    ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;                                     \
    ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;                  \
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;                                           \
    int n = 0;                                                                               \
    ABI_COLL_INIT_(size) ABI_COLL_INIT_(magic) ABI_COLL_INIT_(ext) ABI_COLL_INIT_(minCTAs)   \
    ABI_COLL_INIT_(maxCTAs) ABI_COLL_INIT_(nvlsCTAs) ABI_COLL_INIT_(cgaClusterSize)          \
    ABI_COLL_INIT_(algSelection) ABI_COLL_INIT_(forceAlgSelection) ABI_COLL_INIT_(CTAPolicy) \
    ABI_COLL_INIT_(userProfilerTag) ABI_COLL_INIT_(launchCompletionEvent)                    \
    ABI_ENCRYPTION_INIT_(size) ABI_ENCRYPTION_INIT_(magic) ABI_ENCRYPTION_INIT_(mode)        \
    ABI_ENCRYPTION_INIT_(psk) ABI_INIT_FIELD_(config, ncclConfig_t, size)                    \
    ABI_INIT_FIELD_(config, ncclConfig_t, magic)                                             \
    NCCLSHIM_CONFIG_FIELDS(ABI_CONFIG_INIT_) return n;                                       \
  }
enum { ABI_MAX_INITIALIZER_VALUES = 64 };

#ifdef __cplusplus
extern "C" {
#endif
/* ncclshim's initializer values (abi_ours.c, ABI_DEFINE_INITIALIZERS); returns the count. */
int abi_initializers_ours(abi_value *out);
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
