/* ncclshim: load whatever NCCL is installed at run time, or report cleanly that none is.
 *
 *   ncclshim_init()            load the process-wide default NCCL once (thread-safe)
 *   ncclshim_version()         the loaded NCCL's version, 0 when none
 *   ncclshim_table()           its functions: ncclshim_table()->ncclAllReduce(...)
 *
 * Every table entry is callable: when NCCL is absent a call returns ncclInvalidUsage, when
 * the loaded NCCL lacks the function it returns ncclInvalidArgument; both leave a message
 * for ncclshim_last_error(). Explicit handles (ncclshim_nccl_open) load a chosen library
 * beside the default one. Nothing here calls cuInit, sets environment variables, logs
 * errors, aborts or exits. */
#ifndef NCCLSHIM_H
#define NCCLSHIM_H

#include <stdint.h>

#include "ncclshim/nccl_functions.h"
#include "ncclshim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The function table ------------------------------------------------------------ */

#define NCCLSHIM_NCCL_TABLE_FIELD_(name, version, policy, returns, n, params) \
  ncclshim_pfn_##name name;
typedef struct ncclshim_nccl_table {
  NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_TABLE_FIELD_)
} ncclshim_nccl_table;

/* Facts about a row of the list: "ncclAllReduce", 20300, required or not. */
NCCLSHIM_API const char *ncclshim_nccl_function_name(enum ncclshim_nccl_function fn);
NCCLSHIM_API int ncclshim_nccl_function_version(enum ncclshim_nccl_function fn);
NCCLSHIM_API int ncclshim_nccl_function_required(enum ncclshim_nccl_function fn);

/* ---- Capabilities ------------------------------------------------------------------ */

/* X(ID, "name", unlocking version, function, function, function): the capability holds when
 * the loaded version is at least that and every named function was found. */
/* clang-format off */
#define NCCLSHIM_CAPABILITIES(X) \
  X(PREMUL_SUM,           "premul-sum",           21100, ncclRedOpCreatePreMulSum, ncclRedOpDestroy, ncclRedOpDestroy) \
  X(LAST_ERROR,           "last-error",           21300, ncclGetLastError, ncclGetLastError, ncclGetLastError) \
  X(NONBLOCKING_INIT,     "nonblocking-init",     21400, ncclCommInitRankConfig, ncclCommGetAsyncError, ncclCommFinalize) \
  X(SPLIT,                "split",                21801, ncclCommSplit, ncclCommSplit, ncclCommSplit) \
  X(MEM_ALLOC,            "mem-alloc",            21901, ncclMemAlloc, ncclMemFree, ncclMemFree) \
  X(USER_BUFFER_REGISTER, "user-buffer-register", 21901, ncclCommRegister, ncclCommDeregister, ncclCommDeregister) \
  X(GROUP_SIMULATE,       "group-simulate",       22203, ncclGroupSimulateEnd, ncclGroupSimulateEnd, ncclGroupSimulateEnd) \
  X(SCALABLE_INIT,        "scalable-init",        22304, ncclCommInitRankScalable, ncclCommInitRankScalable, ncclCommInitRankScalable) \
  X(FP8,                  "fp8",                  22403, ncclAllReduce, ncclAllReduce, ncclAllReduce) \
  X(WINDOW_REGISTER,      "window-register",      22703, ncclCommWindowRegister, ncclCommWindowDeregister, ncclCommWindowDeregister) \
  X(SHRINK,               "shrink",               22703, ncclCommShrink, ncclCommShrink, ncclCommShrink) \
  X(SYMMETRIC_MEMORY,     "symmetric-memory",     22800, ncclCommWindowRegister, ncclCommWindowDeregister, ncclMemAlloc) \
  X(ALLTOALL,             "alltoall",             22803, ncclAlltoAll, ncclAlltoAll, ncclAlltoAll) \
  X(GATHER,               "gather",               22803, ncclGather, ncclGather, ncclGather) \
  X(SCATTER,              "scatter",              22803, ncclScatter, ncclScatter, ncclScatter) \
  X(REVOKE,               "revoke",               22807, ncclCommRevoke, ncclCommRevoke, ncclCommRevoke) \
  X(GROW,                 "grow",                 22902, ncclCommGrow, ncclCommGetUniqueId, ncclCommGrow) \
  X(ONE_SIDED,            "one-sided",            22902, ncclPutSignal, ncclSignal, ncclWaitSignal) \
  X(SUSPEND,              "suspend",              22907, ncclCommSuspend, ncclCommResume, ncclCommMemStats) \
  X(TIMEOUT_RESULT,       "timeout-result",       23003, ncclGetErrorString, ncclGetErrorString, ncclGetErrorString) \
  X(PARAMS,               "params",               23003, ncclParamBind, ncclParamGetParameter, ncclParamDumpAll)
/* clang-format on */

#define NCCLSHIM_CAPABILITY_ENUM_(id, name, version, f1, f2, f3) NCCLSHIM_CAP_##id,
typedef enum ncclshim_capability {
  NCCLSHIM_CAPABILITIES(NCCLSHIM_CAPABILITY_ENUM_) NCCLSHIM_CAPABILITY_COUNT
} ncclshim_capability;
#define NCCLSHIM_CAP_BIT(cap) (UINT64_C(1) << (cap))

/* "symmetric-memory"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_capability_name(ncclshim_capability cap);
/* The version that unlocks it (22800), 0 for an unknown value. */
NCCLSHIM_API int ncclshim_capability_version(ncclshim_capability cap);
/* The capability called `name`, or -1. */
NCCLSHIM_API int ncclshim_capability_from_name(const char *name);

/* ---- Versions ---------------------------------------------------------------------- */

/* ncclshim's own version, "0.1.0". */
NCCLSHIM_API const char *ncclshim_library_version(void);

/* Decode an ncclGetVersion code of either encoding (<= 2.8: X*1000+Y*100+Z, from 2.9:
 * X*10000+Y*100+Z). Returns the comparable packed value MAJOR*10000+MINOR*100+PATCH and
 * fills the parts, or returns 0 (parts untouched) for a code no release can have. */
NCCLSHIM_API int ncclshim_decode_version(int code, int *major, int *minor, int *patch);
/* "2.28.9" into buf (always terminated); returns buf. */
NCCLSHIM_API const char *ncclshim_format_version(int packed, char *buf, size_t size);

/* ---- Handles ----------------------------------------------------------------------- */

typedef struct ncclshim_nccl ncclshim_nccl;

typedef struct ncclshim_nccl_options {
  size_t size;      /* sizeof(ncclshim_nccl_options): lets the struct grow */
  const char *path; /* the library file; NULL: NCCLSHIM_NCCL_LIBRARY, then the search */
  int min_version;  /* packed (22800 = 2.28.0); older candidates are refused and the search
                       goes on. 0: any 2.x */
} ncclshim_nccl_options;
#define NCCLSHIM_NCCL_OPTIONS_INIT \
  { sizeof(ncclshim_nccl_options), NULL, 0 }

/* Search, open and bind an NCCL. Returns the status and, unless it is INVALID_ARGUMENT or
 * OUT_OF_MEMORY, sets *out to a handle that describes the outcome (the trail, the reason)
 * and whose table is callable either way. Close it with ncclshim_nccl_close. A path given
 * here or in NCCLSHIM_NCCL_LIBRARY is used alone: if it is unusable the open fails. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_open(const ncclshim_nccl_options *options,
                                                ncclshim_nccl **out);
/* Free the handle's bookkeeping. The library stays mapped (NCCL is never dlclose'd), and
 * pointers taken from the table stay valid. NULL is ignored. Not for the default handle. */
NCCLSHIM_API void ncclshim_nccl_close(ncclshim_nccl *nccl);

/* The process-wide handle, loaded on first use with the default options; never NULL
 * (except when out of memory at that first use). */
NCCLSHIM_API ncclshim_nccl *ncclshim_nccl_default(void);

NCCLSHIM_API ncclshim_status ncclshim_nccl_status(const ncclshim_nccl *nccl);
/* One line: what was loaded, or why nothing was. */
NCCLSHIM_API const char *ncclshim_nccl_message(const ncclshim_nccl *nccl);
NCCLSHIM_API const ncclshim_nccl_table *ncclshim_nccl_functions(const ncclshim_nccl *nccl);
/* Packed version of the loaded library, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version(const ncclshim_nccl *nccl);
/* The raw ncclGetVersion code, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version_code(const ncclshim_nccl *nccl);
/* Absolute path of the file actually mapped, NULL when none. */
NCCLSHIM_API const char *ncclshim_nccl_path(const ncclshim_nccl *nccl);
NCCLSHIM_API ncclshim_found_via ncclshim_nccl_found_via(const ncclshim_nccl *nccl);
/* 1 when the library was already mapped in the process before ncclshim looked. */
NCCLSHIM_API int ncclshim_nccl_preloaded(const ncclshim_nccl *nccl);
/* The build tag from the library's banner ("+cuda13.0"), "" when it carries none. It reads
 * the file, so the first call per handle costs a scan; later calls are free. */
NCCLSHIM_API const char *ncclshim_nccl_build(ncclshim_nccl *nccl);
NCCLSHIM_API uint64_t ncclshim_nccl_capabilities(const ncclshim_nccl *nccl);
NCCLSHIM_API int ncclshim_nccl_has(const ncclshim_nccl *nccl, ncclshim_capability cap);
/* 1 when the loaded library exports this function. */
NCCLSHIM_API int ncclshim_nccl_has_function(const ncclshim_nccl *nccl,
                                            enum ncclshim_nccl_function fn);
/* 1 when an optional function is missing although its version says it should be there
 * (a broken or customised build). */
NCCLSHIM_API int ncclshim_nccl_unexpectedly_missing(const ncclshim_nccl *nccl,
                                                    enum ncclshim_nccl_function fn);
/* Why a capability is missing, "" when it is present. */
NCCLSHIM_API const char *ncclshim_nccl_capability_reason(const ncclshim_nccl *nccl,
                                                         ncclshim_capability cap, char *buf,
                                                         size_t size);

/* A short string for ranks to compare before creating a communicator (equal strings: same
 * NCCL version, same library file contents, same capabilities, same NCCL_* settings other
 * than NCCL_DEBUG*). "nccl2.28.9-f<file hash>-c<capability bits>-e<environment hash>", or
 * "none-e<environment hash>" without NCCL. The file is hashed once per handle (a full read:
 * tens of milliseconds for a 200 MB library); the environment at every call. Returns buf. */
NCCLSHIM_API const char *ncclshim_nccl_fingerprint(ncclshim_nccl *nccl, char *buf, size_t size);

/* The search trail, in the order tried. */
NCCLSHIM_API size_t ncclshim_nccl_attempt_count(const ncclshim_nccl *nccl);
NCCLSHIM_API const ncclshim_attempt *ncclshim_nccl_attempt(const ncclshim_nccl *nccl, size_t index);

/* ---- The default handle, volk-style -------------------------------------------------- */

/* Load the default NCCL (once) and return its status. */
NCCLSHIM_API ncclshim_status ncclshim_init(void);
/* Packed version of the default NCCL, 0 when none. */
NCCLSHIM_API int ncclshim_version(void);
/* The default table; loads on first use; never NULL. */
NCCLSHIM_API const ncclshim_nccl_table *ncclshim_table(void);

/* ---- ncclConfig_t ------------------------------------------------------------------ */

/* X(ID, field, kind INT or PTR, first version that honours it) */
/* clang-format off */
#define NCCLSHIM_CONFIG_FIELDS(X) \
  X(BLOCKING,              blocking,            INT, 21400) \
  X(CGA_CLUSTER_SIZE,      cgaClusterSize,      INT, 21700) \
  X(MIN_CTAS,              minCTAs,             INT, 21700) \
  X(MAX_CTAS,              maxCTAs,             INT, 21700) \
  X(NET_NAME,              netName,             PTR, 21700) \
  X(SPLIT_SHARE,           splitShare,          INT, 21800) \
  X(TRAFFIC_CLASS,         trafficClass,        INT, 22600) \
  X(COMM_NAME,             commName,            PTR, 22700) \
  X(COLLNET_ENABLE,        collnetEnable,       INT, 22700) \
  X(CTA_POLICY,            CTAPolicy,           INT, 22700) \
  X(SHRINK_SHARE,          shrinkShare,         INT, 22700) \
  X(NVLS_CTAS,             nvlsCTAs,            INT, 22700) \
  X(NCHANNELS_PER_NET_PEER, nChannelsPerNetPeer, INT, 22800) \
  X(NVLINK_CENTRIC_SCHED,  nvlinkCentricSched,  INT, 22800) \
  X(GRAPH_USAGE_MODE,      graphUsageMode,      INT, 22902) \
  X(NUM_RMA_CTX,           numRmaCtx,           INT, 22902) \
  X(MAX_P2P_PEERS,         maxP2pPeers,         INT, 23003) \
  X(GRAPH_STREAM_ORDERING, graphStreamOrdering, INT, 23007)
/* clang-format on */

#define NCCLSHIM_CONFIG_FIELD_ENUM_(id, field, kind, version) NCCLSHIM_CONFIG_##id,
typedef enum ncclshim_config_field {
  NCCLSHIM_CONFIG_FIELDS(NCCLSHIM_CONFIG_FIELD_ENUM_) NCCLSHIM_CONFIG_FIELD_COUNT
} ncclshim_config_field;

/* Fill the caller's ncclConfig_t (from any nccl.h, or ncclshim's) so that any NCCL reads it
 * right: every field UNDEF, magic set, size = min(config_size, the 2.30.7 layout's 96),
 * version = that layout's release. Nothing past config_size is written. An older library
 * reads only its own prefix; a newer one fills what lies past `size` with its defaults.
 * Use the macro, which passes the size of the caller's type. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_init(void *config, size_t config_size);
#define NCCLSHIM_NCCL_CONFIG_INIT(config) ncclshim_nccl_config_init((config), sizeof(*(config)))

/* OK when the loaded library honours the field and it lies inside a config of config_size
 * bytes; otherwise UNAVAILABLE with the reason in ncclshim_last_error(). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_check(const ncclshim_nccl *nccl,
                                                        size_t config_size,
                                                        ncclshim_config_field field);
/* Set a field after ncclshim_nccl_config_check; a refused field is left untouched (UNDEF). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_int(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field, int value);
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_str(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field,
                                                          const char *value);
/* "blocking"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_config_field_name(ncclshim_config_field field);

/* NCCL's own text for a result code, from ncclshim's table (no library needed); codes it
 * does not know give "unknown result code". */
NCCLSHIM_API const char *ncclshim_nccl_result_string(int result);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_H */
