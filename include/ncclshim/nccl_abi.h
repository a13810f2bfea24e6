/* NCCL's public ABI (2.18 -> 2.32.3), written from the facts in docs/nccl-abi.md, not from nccl.h.
 *
 * Coexistence with the real nccl.h:
 *  - nccl.h included first (NCCL_H_ defined): its types are used as they are; this header adds
 *    only ncclshim's own names (ncclshim_nccl_config and the aliases below).
 *  - this header first: it stands in for nccl.h. It defines NCCL_H_, so a later
 *    `#include <nccl.h>` is a no-op, and it declares the same types, constants and function
 *    prototypes at the 2.32.3 level. It does not include cuda_runtime.h as nccl.h does.
 * Either way the program sees one set of types with NCCL's names, sizes and values. */
#ifndef NCCLSHIM_NCCL_ABI_H
#define NCCLSHIM_NCCL_ABI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opaque CUDA stream; the same type as cuda_runtime.h's (C11 allows the identical typedef). */
typedef struct CUstream_st *cudaStream_t;

/* Types that older nccl.h files lack (or name differently) get ncclshim names, so that the
 * function list compiles whichever nccl.h came first. Each is ABI-identical to NCCL's. */
typedef struct ncclWindow_vidmem *ncclshim_window_t;   /* ncclWindow_t (2.27.3+) */
typedef struct ncclSimInfo_v22200 ncclshim_sim_info_t; /* ncclSimInfo_t (2.22.3+) */
typedef struct ncclshim_wait_signal_desc {             /* ncclWaitSignalDesc_t (2.29.2+) */
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclshim_wait_signal_desc_t;
typedef struct ncclshim_param_handle *ncclshim_param_handle_t; /* ncclParamHandle_t (2.30.3+) */

/* The device API's host functions (nccl_device.h, 2.28.3+). NCCL changes most of its structs
 * between releases, so ncclshim declares those as incomplete types and only ever forwards
 * pointers to them; never dereference one. Only the two structs passed by value are spelled
 * out, with NCCL's layout: ncclTeam_t and ncclMultimemHandle_t. */
typedef struct ncclshim_team { /* ncclTeam_t: three ints, returned and passed by value */
  int nRanks;
  int rank;
  int stride;
} ncclshim_team_t;
typedef struct ncclshim_multimem_handle { /* ncclMultimemHandle_t (2.29.2+), by value */
  void *mcBasePtr;
} ncclshim_multimem_handle_t;
typedef struct ncclshim_dev_comm_requirements ncclshim_dev_comm_requirements_t;
typedef struct ncclshim_dev_comm ncclshim_dev_comm_t;
typedef struct ncclshim_dev_resource_requirements ncclshim_dev_resource_requirements_t;
typedef struct ncclshim_lsa_barrier_handle ncclshim_lsa_barrier_handle_t;
typedef struct ncclshim_gin_barrier_handle ncclshim_gin_barrier_handle_t;
typedef struct ncclshim_lla2a_handle ncclshim_lla2a_handle_t;
typedef struct ncclshim_gin_outbox_handle ncclshim_gin_outbox_handle_t;
typedef struct ncclshim_gin_inbox_a2a_handle ncclshim_gin_inbox_a2a_handle_t;
typedef struct ncclshim_cft_le_id ncclshim_cft_le_id_t; /* ncclCftLeId (2.32.3+) */
typedef struct ncclshim_cft_barrier_handle ncclshim_cft_barrier_handle_t; /* 2.32.3+ */

/* ncclCommProperties_t (nccl_device.h, 2.29.2+), the one device-API struct ncclshim reads:
 * ncclCommQueryProperties fills it in the layout of the `version` it carries (never newer
 * than the library). This is the layout of NCCLSHIM_COMM_PROPERTIES_FULL_VERSION and later
 * (2.30.7 has the same); 2.29.2 and 2.29.3 stop at ginType, a one-byte enum there
 * (ncclshim_comm_properties_v22902). The abi suite checks both against each release. */
/* The fields both layouts start with, in NCCL's order and with NCCL's names. */
#define NCCLSHIM_COMM_PROPERTIES_HEAD_                                   \
  size_t size;                                                           \
  unsigned int magic;   /* NCCL_API_MAGIC */                             \
  unsigned int version; /* the layout's release, as NCCL_VERSION_CODE */ \
  int rank;                                                              \
  int nRanks;                                                            \
  int cudaDev;                                                           \
  int nvmlDev;                                                           \
  bool deviceApiSupport;                                                 \
  bool multimemSupport;
typedef struct ncclshim_comm_properties {
  NCCLSHIM_COMM_PROPERTIES_HEAD_
  int ginType; /* ncclGinType_t: 0 none, 2 proxy, 3 gdaki */
  int nLsaTeams;
  bool hostRmaSupport;
  int railedGinType; /* ncclGinType_t */
} ncclshim_comm_properties_t;
typedef struct ncclshim_comm_properties_v22902 { /* 2.29.2 and 2.29.3 */
  NCCLSHIM_COMM_PROPERTIES_HEAD_
  uint8_t ginType; /* ncclGinType_t, an enum of uint8_t */
} ncclshim_comm_properties_v22902_t;
/* The first release whose device-API structs (ncclDevCommRequirements, ncclCommProperties)
 * start with size, NCCL_API_MAGIC and version; 2.28's have no such header. */
#define NCCLSHIM_NCCL_API_HEADER_VERSION 22902
/* The first release with ncclshim_comm_properties' layout: it widened ginType and appended
 * nLsaTeams, hostRmaSupport and railedGinType (2.29.3 has the old layout, 2.29.7 the new). */
#define NCCLSHIM_COMM_PROPERTIES_FULL_VERSION 22904
/* The newest `version` ncclshim puts in the struct (NCCL reads the full layout by it). 2.32.3
 * appends commHash, ginMinStride, ginConnectionType, ginSupport[64], devCommRuntimeVersionSize
 * and three cft flags; ncclshim keeps asking for this layout, which NCCL still fills as it
 * was, because the device headers of 2.32.3 that fix the new fields' sizes were not
 * available to check them (docs/nccl-abi.md). ncclDevCommRequirements_t also grew at its
 * end in 2.32.3; ncclshim only forwards pointers to it. */
#define NCCLSHIM_COMM_PROPERTIES_LAYOUT_VERSION 22907

/* The newest ncclConfig_t layout (2.32.3, 120 bytes), always available under ncclshim's tag. */
struct ncclshim_nccl_config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;            /* 2.14 */
  int cgaClusterSize;      /* 2.17 */
  int minCTAs;             /* 2.17 */
  int maxCTAs;             /* 2.17 */
  const char *netName;     /* 2.17 */
  int splitShare;          /* 2.18 */
  int trafficClass;        /* 2.26 */
  const char *commName;    /* 2.27 */
  int collnetEnable;       /* 2.27 */
  int CTAPolicy;           /* 2.27 */
  int shrinkShare;         /* 2.27 */
  int nvlsCTAs;            /* 2.27 */
  int nChannelsPerNetPeer; /* 2.28 */
  int nvlinkCentricSched;  /* 2.28 */
  int graphUsageMode;      /* 2.29.2 */
  int numRmaCtx;           /* 2.29.2 */
  int maxP2pPeers;         /* 2.30.3 */
  int graphStreamOrdering; /* 2.30.7 */
  int launchOrderImplicit; /* 2.32.3 (the first header held: docs/nccl-abi.md) */
  int numRmaSig;           /* 2.32.3 */
  int rmaEagerInit;        /* 2.32.3 */
  int hostCftMode;         /* 2.32.3, an ncclHostCftMode_t value */
  int nvlsHostMode;        /* 2.32.3, ncclNvlsHostMode_t bits */
};

#define NCCLSHIM_NCCL_CONFIG_MAGIC 0xcafebeefu
/* The NCCL release whose ncclConfig_t layout struct ncclshim_nccl_config copies. */
#define NCCLSHIM_NCCL_CONFIG_LAYOUT_VERSION 23203

/* ncclConfigExt_t (2.32.3+, 24 bytes): one vendor option of a per-collective config, in a
 * singly linked list. */
typedef struct ncclshim_config_ext {
  struct ncclshim_config_ext *next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char *s;
    void *raw;
  } val;
} ncclshim_config_ext_t;

/* ncclCollConfig_t (2.32.3+, 72 bytes): the per-call options of the ...Config collectives.
 * Versioned like ncclConfig_t (size, NCCL_API_MAGIC, the layout's release). */
typedef struct ncclshim_coll_config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclshim_config_ext_t *ext;
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char *algSelection;
  int forceAlgSelection;
  int CTAPolicy;
  uint64_t userProfilerTag;
  struct CUevent_st *launchCompletionEvent; /* cudaEvent_t, the caller's */
} ncclshim_coll_config_t;
/* The NCCL release whose ncclCollConfig_t layout ncclshim_coll_config copies. */
#define NCCLSHIM_COLL_CONFIG_LAYOUT_VERSION 23203

/* ncclEncryptionConfig_t (2.32.3+, 32 bytes): ncclSetEncryption's argument. */
typedef struct ncclshim_encryption_config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode; /* ncclEncryptionMode_t */
  const char *psk;
} ncclshim_encryption_config_t;

#ifndef NCCL_H_
#define NCCL_H_
#define NCCLSHIM_PROVIDES_NCCL_H 1

#define NCCL_MAJOR 2
#define NCCL_MINOR 32
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 23203
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

typedef struct ncclComm *ncclComm_t;
typedef ncclshim_window_t ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_GIN_ONLY 0x04
#define NCCL_WIN_CFT_COUNTED 0x08
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
#define NCCL_REVOKE_DEFAULT 0x00
#define NCCL_SUSPEND_MEM 0x01
#define NCCL_API_MAGIC 0xcafebeef

typedef struct ncclshim_nccl_config ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                            \
  {                                                                                        \
    sizeof(ncclConfig_t), NCCLSHIM_NCCL_CONFIG_MAGIC, NCCLSHIM_NCCL_CONFIG_LAYOUT_VERSION, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                       \
  }

typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Bit flags, OR-ed. */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

typedef ncclshim_config_ext_t ncclConfigExt_t;
typedef ncclshim_coll_config_t ncclCollConfig_t;
#define NCCL_COLLCONFIG_INITIALIZER                                                      \
  {                                                                                      \
    sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCLSHIM_COLL_CONFIG_LAYOUT_VERSION, NULL, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,             \
        NCCL_CONFIG_UNDEF_INT, NULL, 1, NCCL_CONFIG_UNDEF_INT, 0, NULL                   \
  }

typedef enum { NCCL_ENCRYPTION_MODE_NONE = 0, NCCL_ENCRYPTION_MODE_PSK = 1 } ncclEncryptionMode_t;
typedef ncclshim_encryption_config_t ncclEncryptionConfig_t;
#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                                        \
  {                                                                                               \
    sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_ENCRYPTION_MODE_NONE, \
        NULL                                                                                      \
  }

struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
};
typedef ncclshim_sim_info_t ncclSimInfo_t;
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT }

typedef ncclshim_wait_signal_desc_t ncclWaitSignalDesc_t;
typedef ncclshim_param_handle_t ncclParamHandle_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5, /* first value a custom (PreMulSum) op can take */
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

#endif /* NCCL_H_ */

#endif /* NCCLSHIM_NCCL_ABI_H */
