/* ncclshim: load whatever NCCL is installed at run time, or report cleanly that none is.
 *
 * The product, and where each part lives (headers here in include/ncclshim/, code in src/):
 *   NCCL table          this header: the default handle (ncclshim_init, ncclshim_table) and
 *                       explicit ones (ncclshim_nccl_open); the function list is
 *                       nccl_functions.h, NCCL's types nccl_abi.h; code in src/nccl/
 *   CUDA driver table   cuda.h (streams, events, memory, device facts; cuda_functions.h,
 *                       cuda_abi.h); code in src/cuda/
 *   communicators       comm.h: checked calls, non-blocking init, bounded waits, abort;
 *                       src/comm/
 *   symmetric memory    symmem.h: NCCL >= 2.28 windows; src/comm/
 *   statuses, trails    status.h; src/status.c, and src/handle.c, the handle lifecycle the NCCL
 *                       and CUDA bindings share over loader/ (dlopen, the search, the ELF check)
 *   ncclshim-probe      the capability report, text and JSON; src/probe/
 *   drop-in             libncclshim-nccl.so: NCCL's own names for programs built against
 *                       nccl.h; src/dropin/
 * docs/reference.md says how to build against each; docs/contributing.md how to extend them.
 *
 *   ncclshim_init()            load the process-wide default NCCL once (thread-safe)
 *   ncclshim_version()         the loaded NCCL's version, 0 when none
 *   ncclshim_table()           its functions: ncclshim_table()->ncclAllReduce(...)
 *
 * Every table entry is callable: when NCCL is absent a call returns ncclInvalidUsage, when
 * the loaded NCCL lacks the function it returns ncclInvalidArgument; both leave a message
 * for ncclshim_last_error(). Explicit handles (ncclshim_nccl_open) load a chosen library
 * beside the default one. Nothing here calls cuInit, sets environment variables, logs
 * errors, aborts or exits.
 *
 * Conventions for every function below:
 *  - Errors: a function returning ncclshim_status returns NCCLSHIM_OK or a failure and, on
 *    failure, leaves a message for ncclshim_last_error() on the calling thread. Accessors
 *    cannot fail: they accept NULL (the out parameter of an open that ran out of memory) and
 *    answer as for "no NCCL".
 *  - Strings: returned strings belong to ncclshim; name and text functions return static
 *    strings, handle accessors strings that live as long as the handle.
 *  - Thread safety: every function is thread-safe, except ncclshim_nccl_close (not while
 *    another thread uses the same handle) and the ncclshim_nccl_config_* calls, which must
 *    not race on the same ncclConfig_t. Calls through the table follow NCCL's rules.
 *  - Docs: docs/reference.md (search order, environment, status codes, ABI), docs/loader.md. */
#ifndef NCCLSHIM_H
#define NCCLSHIM_H

#include <stdint.h>

#include "ncclshim/nccl_functions.h"
#include "ncclshim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The function table ------------------------------------------------------------ */

#define NCCLSHIM_NCCL_TABLE_FIELD_(name, version, policy, role, returns, n, params) \
  ncclshim_pfn_##name name;
typedef struct ncclshim_nccl_table {
  NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_TABLE_FIELD_)
} ncclshim_nccl_table;

/* Facts about a row of the list (status.h): its name ("ncclAllReduce"), the packed NCCL
 * version that first exported it (20300), and 1 when it is REQUIRED (a library without it is
 * refused). */
NCCLSHIM_DECLARE_FUNCTION_FACTS(ncclshim_nccl, ncclshim_nccl_function)

/* ---- Capabilities ------------------------------------------------------------------ */

/* X(ID, "name", unlocking version, function...): the capability holds when the loaded
 * version is at least that and every named function (one to six) was found. New rows go at
 * the end: a capability's number is its bit. */
/* clang-format off */
#define NCCLSHIM_CAPABILITIES(X) \
  X(PREMUL_SUM,           "premul-sum",           21100, ncclRedOpCreatePreMulSum, ncclRedOpDestroy) \
  X(LAST_ERROR,           "last-error",           21300, ncclGetLastError) \
  X(NONBLOCKING_INIT,     "nonblocking-init",     21400, ncclCommInitRankConfig, ncclCommGetAsyncError, ncclCommFinalize) \
  X(SPLIT,                "split",                21801, ncclCommSplit) \
  X(MEM_ALLOC,            "mem-alloc",            21901, ncclMemAlloc, ncclMemFree) \
  X(USER_BUFFER_REGISTER, "user-buffer-register", 21901, ncclCommRegister, ncclCommDeregister) \
  X(GROUP_SIMULATE,       "group-simulate",       22203, ncclGroupSimulateEnd) \
  X(SCALABLE_INIT,        "scalable-init",        22304, ncclCommInitRankScalable) \
  X(FP8,                  "fp8",                  22403, ncclAllReduce) \
  X(WINDOW_REGISTER,      "window-register",      22703, ncclCommWindowRegister, ncclCommWindowDeregister) \
  X(SHRINK,               "shrink",               22703, ncclCommShrink) \
  X(SYMMETRIC_MEMORY,     "symmetric-memory",     22800, ncclCommWindowRegister, ncclCommWindowDeregister, ncclMemAlloc) \
  X(ALLTOALL,             "alltoall",             22803, ncclAlltoAll) \
  X(GATHER,               "gather",               22803, ncclGather) \
  X(SCATTER,              "scatter",              22803, ncclScatter) \
  X(REVOKE,               "revoke",               22807, ncclCommRevoke) \
  X(GROW,                 "grow",                 22902, ncclCommGrow, ncclCommGetUniqueId) \
  X(ONE_SIDED,            "one-sided",            22902, ncclPutSignal, ncclSignal, ncclWaitSignal) \
  X(SUSPEND,              "suspend",              22907, ncclCommSuspend, ncclCommResume, ncclCommMemStats) \
  X(TIMEOUT_RESULT,       "timeout-result",       23003, ncclGetErrorString) \
  X(PARAMS,               "params",               23003, ncclParamBind, ncclParamGetParameter, ncclParamDumpAll) \
  X(DEVICE_API,           "device-api",           22803, ncclDevCommCreate, ncclDevCommDestroy, ncclTeamWorld, ncclTeamLsa, ncclTeamRankToWorld, ncclLsaBarrierCreateRequirement) \
  X(DEVICE_POINTERS,      "device-pointers",      22902, ncclCommQueryProperties, ncclGetLsaDevicePointer, ncclGetPeerDevicePointer) \
  X(COLL_CONFIG,          "coll-config",          23203, ncclAllReduceConfig, ncclBroadcastConfig, ncclReduceConfig, ncclAllGatherConfig, ncclReduceScatterConfig, ncclAlltoAllConfig) \
  X(LAUNCH_EVENT,         "launch-event",         23203, ncclAllReduceConfig) \
  X(ENCRYPTION,           "encryption",           23203, ncclSetEncryption) \
  X(NVLS_HOST_MODE,       "nvls-host-mode",       23203, ncclCommInitRankConfig) \
  X(CFT,                  "cft",                  23203, ncclTeamCft, ncclTeamCftMultimem, ncclGetCftDeviceLeInfo, ncclCftBarrierCreateRequirement)
/* clang-format on */

#define NCCLSHIM_CAPABILITY_ENUM_(id, name, version, ...) NCCLSHIM_CAP_##id,
typedef enum ncclshim_capability {
  NCCLSHIM_CAPABILITIES(NCCLSHIM_CAPABILITY_ENUM_) NCCLSHIM_CAPABILITY_COUNT
} ncclshim_capability;
#define NCCLSHIM_CAP_BIT(cap) (UINT64_C(1) << (cap))

/* "symmetric-memory"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_capability_name(ncclshim_capability cap);
/* The version that unlocks it (22800), 0 for an unknown value. */
NCCLSHIM_API int ncclshim_capability_version(ncclshim_capability cap);
/* The capability called `name` ("symmetric-memory"), or -1 for NULL or an unknown name. */
NCCLSHIM_API int ncclshim_capability_from_name(const char *name);

/* ---- Versions ---------------------------------------------------------------------- */

/* ncclshim's own version, "MAJOR.MINOR.PATCH" (meson.build's project version). */
NCCLSHIM_API const char *ncclshim_library_version(void);

/* Decode an ncclGetVersion code of either encoding (<= 2.8: X*1000+Y*100+Z, from 2.9:
 * X*10000+Y*100+Z). Returns the comparable packed value MAJOR*10000+MINOR*100+PATCH and
 * fills the parts (each pointer may be NULL), or returns 0 (parts untouched) for a code no
 * release can have (below 1000). */
NCCLSHIM_API int ncclshim_decode_version(int code, int *major, int *minor, int *patch);
/* "2.28.9" for 22809 into buf of `size` bytes (cut to fit, always terminated; nothing
 * written when size is 0); "none" for packed <= 0. Returns buf. */
NCCLSHIM_API const char *ncclshim_format_version(int packed, char *buf, size_t size);

/* ---- Handles ----------------------------------------------------------------------- */

typedef struct ncclshim_nccl ncclshim_nccl;

typedef struct ncclshim_nccl_options {
  size_t size;            /* sizeof(ncclshim_nccl_options): lets the struct grow */
  const char *path;       /* the library file; NULL: NCCLSHIM_NCCL_LIBRARY, then the search */
  int min_version;        /* packed (22800 = 2.28.0); older candidates are refused and the search
                             goes on. 0: any 2.x */
  int refuse_second_copy; /* 1: a path (here or NCCLSHIM_NCCL_LIBRARY) naming another file
                             than an NCCL already mapped in the process is refused with
                             SECOND_COPY before it is mapped. 0: NCCLSHIM_REFUSE_SECOND_NCCL
                             decides; by default it is mapped, with a warning in the message */
} ncclshim_nccl_options;
#define NCCLSHIM_NCCL_OPTIONS_INIT \
  { sizeof(ncclshim_nccl_options), NULL, 0, 0 }

/* The handle's functions (NCCLSHIM_DECLARE_HANDLE, status.h):
 * ncclshim_nccl_open searches, opens and binds an NCCL (search order: docs/reference.md).
 * options: NULL for NCCLSHIM_NCCL_OPTIONS_INIT. A path given here or in NCCLSHIM_NCCL_LIBRARY
 * is used alone: if it is unusable the open fails.
 * Returns OK, or why no candidate was accepted: NOT_FOUND, LOAD_FAILED, NOT_NCCL,
 * MISSING_SYMBOLS, VERSION_TOO_OLD, WRONG_MAJOR, BAD_VERSION (the first refused candidate's
 * reason), INVALID_ARGUMENT (out NULL, options->size too small, min_version negative, an
 * empty path, a relative NCCLSHIM_NCCL_LIBRARY), SECOND_COPY (refuse_second_copy, above),
 * OUT_OF_MEMORY.
 * *out is left untouched only when out is NULL, options is unusable (size, min_version) or
 * memory runs out; otherwise it is set - also when the search failed - to a handle that
 * describes the outcome (the trail, the reason) and whose table is callable either way.
 * Close it with ncclshim_nccl_close. Thread-safe.
 * ncclshim_nccl_close frees the handle's bookkeeping. The library stays mapped (NCCL is never
 * dlclose'd), and pointers taken from the table stay valid; strings and attempts from the
 * handle do not. NULL and the default handle are ignored. Not while another thread uses the
 * handle.
 * ncclshim_nccl_default: the process-wide handle, loaded once on first use with the default
 * options (pthread_once: concurrent first calls wait for one load), in the library's static
 * storage: never NULL. Its status says whether NCCL was found.
 * ncclshim_nccl_functions: the handle's function table; never NULL and no entry is NULL:
 * without NCCL an entry returns ncclInvalidUsage, for a function the loaded NCCL lacks
 * ncclInvalidArgument (both leave a message for ncclshim_last_error()).
 * The accessors (ncclshim_nccl_status, _message, _path, _found_via, _preloaded,
 * _attempt_count, _attempt) accept NULL, answering as for "out of memory". The path is that
 * of the file that defines the NCCL functions: for a library that only links NCCL (a wrapper
 * with DT_NEEDED libnccl.so.2), that NCCL's file, not the wrapper's (the trail names the
 * wrapper). */
NCCLSHIM_DECLARE_HANDLE(ncclshim_nccl, ncclshim_nccl, ncclshim_nccl_options, ncclshim_nccl_table)
/* Packed version of the loaded library, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version(const ncclshim_nccl *nccl);
/* The raw ncclGetVersion code, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version_code(const ncclshim_nccl *nccl);
/* The build tag from the library's banner ("+cuda13.0"), "" when it carries none or no
 * library is loaded. It reads the file, so the first call per handle costs a scan; later
 * calls are free. Thread-safe (the scan runs once under the handle's lock). */
NCCLSHIM_API const char *ncclshim_nccl_build(ncclshim_nccl *nccl);
/* The capabilities present, as NCCLSHIM_CAP_BIT(cap) bits; 0 without NCCL. */
NCCLSHIM_API uint64_t ncclshim_nccl_capabilities(const ncclshim_nccl *nccl);
/* 1 when the loaded NCCL has `cap` (its version and functions: NCCLSHIM_CAPABILITIES);
 * 0 otherwise, also without NCCL and for an unknown value. */
NCCLSHIM_API int ncclshim_nccl_has(const ncclshim_nccl *nccl, ncclshim_capability cap);
/* 1 when the loaded library exports this function; 0 without NCCL or for an unknown fn. */
NCCLSHIM_API int ncclshim_nccl_has_function(const ncclshim_nccl *nccl,
                                            enum ncclshim_nccl_function fn);
/* 1 when an optional function is missing although its version says it should be there
 * (a broken or customised build); 0 otherwise, also without NCCL. */
NCCLSHIM_API int ncclshim_nccl_unexpectedly_missing(const ncclshim_nccl *nccl,
                                                    enum ncclshim_nccl_function fn);
/* Why a capability is missing ("needs NCCL >= 2.28.0; loaded 2.27.3", "no NCCL is loaded",
 * "the library lacks ncclX", "unknown capability N"), "" when it is present, written into
 * buf of `size` bytes (cut to fit, always terminated; nothing written when size is 0).
 * Returns buf. */
NCCLSHIM_API const char *ncclshim_nccl_capability_reason(const ncclshim_nccl *nccl,
                                                         ncclshim_capability cap, char *buf,
                                                         size_t size);

/* A short string for ranks to compare before creating a communicator (equal strings: same
 * NCCL version, same library build, same capabilities, same NCCL_* settings other than
 * NCCL_DEBUG*). "nccl2.28.9-b<build-id>-s<file size>-c<capability bits>-e<environment hash>"
 * when the library carries a GNU build-id note (read from the mapped image: no file is
 * read); "nccl2.28.9-f<content hash>-c<capability bits>-e<environment hash>" for one without
 * (the whole file is hashed once per handle: tens of milliseconds for a 200 MB library);
 * "none-e<environment hash>" without NCCL. The environment is hashed at every call. Written
 * into buf of `size` bytes (64 is enough; cut to fit, always terminated; nothing written
 * when size is 0). Returns buf. Thread-safe (lazy work runs once under the handle's lock),
 * but the environment must not change meanwhile (setenv is not thread-safe anyway). */
NCCLSHIM_API const char *ncclshim_nccl_fingerprint(ncclshim_nccl *nccl, char *buf, size_t size);
/* The same with the content hash whatever the library carries: a check of the bytes
 * ("nccl2.28.9-f<content hash>-c...-e..."), which reads the whole file once per handle. */
NCCLSHIM_API const char *ncclshim_nccl_fingerprint_content(ncclshim_nccl *nccl, char *buf,
                                                           size_t size);

/* ---- Every NCCL in the process, and every NCCL on the machine ---------------------- */

/* One NCCL library: mapped in the process (the census) or visible to the search (the list).
 * Owned by ncclshim, reached through the pointers below; new fields are only appended. */
typedef struct ncclshim_nccl_entry {
  const char *path;       /* absolute; for NCCL linked into the program, the program's file */
  int version;            /* packed; 0 when unknown */
  ncclshim_found_via how; /* census: NCCLSHIM_VIA_PRELOADED; list: the first search step
                             that reaches the file (for the chosen one, the step that found it,
                             as ncclshim_nccl_found_via says) */
  int mapped;             /* 1 when mapped in this process */
  int in_program;         /* 1 when linked into the executable itself (statically) */
  int chosen;             /* 1 for the library the handle uses */
} ncclshim_nccl_entry;

/* The census taken when the handle was opened: every object mapped in the process that
 * defines the function ncclGetVersion (whatever its file name, the executable included;
 * ncclshim's drop-in left out), the chosen one marked. More than one is a hazard: each NCCL
 * has its own communicators, threads and NCCL_* settings, and a communicator of one is
 * garbage to the other; the handle's message then carries a warning naming them. The count,
 * and the index-th entry (NULL when index >= the count); entries live as long as the handle. */
NCCLSHIM_API size_t ncclshim_nccl_census_count(const ncclshim_nccl *nccl);
NCCLSHIM_API const ncclshim_nccl_entry *ncclshim_nccl_census_entry(const ncclshim_nccl *nccl,
                                                                   size_t index);

/* The three functions of each list ncclshim hands out (ncclshim_nccl_list here,
 * ncclshim_plugin_list in nccl_plugins.h), declared by NCCLSHIM_DECLARE_LIST(prefix,
 * list_type, entry_type):
 *   prefix_count(list)         how many entries; 0 for NULL
 *   prefix_entry(list, index)  the index-th entry (NULL when index >= the count); entries
 *                              live as long as the list
 *   prefix_free(list)          frees the list and its entries; NULL is ignored */
#define NCCLSHIM_DECLARE_LIST(prefix, list_type, entry_type)                          \
  NCCLSHIM_API size_t prefix##_count(const list_type *list);                          \
  NCCLSHIM_API const entry_type *prefix##_entry(const list_type *list, size_t index); \
  NCCLSHIM_API void prefix##_free(list_type *list);

/* Every NCCL the search can see now, without loading any: the census, then each file of
 * the search's steps (LD_LIBRARY_PATH, the active environment, the ld.so cache, the
 * well-known places) that passes the ELF check, each file once (by real path), with the
 * version its banner states (read from the file's .rodata section, a few hundred KB).
 * `chosen` (or NULL) marks its library. OK, INVALID_ARGUMENT (out NULL) or OUT_OF_MEMORY.
 * Free with ncclshim_nccl_list_free. */
typedef struct ncclshim_nccl_list ncclshim_nccl_list;
NCCLSHIM_API ncclshim_status ncclshim_nccl_list_visible(const ncclshim_nccl *chosen,
                                                        ncclshim_nccl_list **out);
NCCLSHIM_DECLARE_LIST(ncclshim_nccl_list, ncclshim_nccl_list, ncclshim_nccl_entry)

/* ---- The default handle, volk-style -------------------------------------------------- */

/* Load the default NCCL (once: ncclshim_nccl_default) and return its status, as
 * ncclshim_nccl_open returns it (OK, NOT_FOUND, ...). Thread-safe; later calls are cheap. */
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
  X(GRAPH_STREAM_ORDERING, graphStreamOrdering, INT, 23007) \
  X(LAUNCH_ORDER_IMPLICIT, launchOrderImplicit, INT, 23203) \
  X(NUM_RMA_SIG,           numRmaSig,           INT, 23203) \
  X(RMA_EAGER_INIT,        rmaEagerInit,        INT, 23203) \
  X(HOST_CFT_MODE,         hostCftMode,         INT, 23203) \
  X(NVLS_HOST_MODE,        nvlsHostMode,        INT, 23203)
/* clang-format on */

#define NCCLSHIM_CONFIG_FIELD_ENUM_(id, field, kind, version) NCCLSHIM_CONFIG_##id,
typedef enum ncclshim_config_field {
  NCCLSHIM_CONFIG_FIELDS(NCCLSHIM_CONFIG_FIELD_ENUM_) NCCLSHIM_CONFIG_FIELD_COUNT
} ncclshim_config_field;

/* Fill the caller's ncclConfig_t (from any nccl.h, or ncclshim's) so that any NCCL reads it
 * right: every field UNDEF, magic set, size = min(config_size, the 2.32.3 layout's 120),
 * version = that layout's release. Nothing past config_size is written. An older library
 * reads only its own prefix; a newer one fills what lies past `size` with its defaults.
 * Use the macro, which passes the size of the caller's type. Needs no NCCL.
 * Returns OK; INVALID_ARGUMENT when config is NULL or config_size does not reach the
 * `blocking` field (the header: size, magic, version). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_init(void *config, size_t config_size);
#define NCCLSHIM_NCCL_CONFIG_INIT(config) ncclshim_nccl_config_init((config), sizeof(*(config)))

/* OK when the loaded library honours the field and it lies inside a config of config_size
 * bytes; otherwise UNAVAILABLE with the reason in ncclshim_last_error() (the field lies past
 * config_size, no NCCL is loaded, or the loaded one predates the field), INVALID_ARGUMENT
 * for an unknown field. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_check(const ncclshim_nccl *nccl,
                                                        size_t config_size,
                                                        ncclshim_config_field field);
/* Set a field of a config made by ncclshim_nccl_config_init, after the checks of
 * ncclshim_nccl_config_check (same UNAVAILABLE answers). Also INVALID_ARGUMENT: config NULL
 * or too small, not initialised (no magic), or the wrong kind (_int for an int field, _str
 * for a string field: netName, commName). A refused field is left untouched (UNDEF). _str
 * stores the pointer: the string must outlive the communicator's creation. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_int(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field, int value);
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_str(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field,
                                                          const char *value);
/* "blocking"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_config_field_name(ncclshim_config_field field);

/* ---- ncclCollConfig_t: the per-collective config of the ...Config collectives ------- */

/* X(ID, field, kind, first version that honours it). Kinds: INT, PTR (a string: _set_str),
 * U64 (_set_u64) and HANDLE (a pointer NCCL uses as is: the ncclConfigExt_t list, the CUDA
 * event; _set_ptr). */
/* clang-format off */
#define NCCLSHIM_COLL_CONFIG_FIELDS(X) \
  X(EXT,                     ext,                   HANDLE, 23203) \
  X(MIN_CTAS,                minCTAs,               INT,    23203) \
  X(MAX_CTAS,                maxCTAs,               INT,    23203) \
  X(NVLS_CTAS,               nvlsCTAs,              INT,    23203) \
  X(CGA_CLUSTER_SIZE,        cgaClusterSize,        INT,    23203) \
  X(ALG_SELECTION,           algSelection,          PTR,    23203) \
  X(FORCE_ALG_SELECTION,     forceAlgSelection,     INT,    23203) \
  X(CTA_POLICY,              CTAPolicy,             INT,    23203) \
  X(USER_PROFILER_TAG,       userProfilerTag,       U64,    23203) \
  X(LAUNCH_COMPLETION_EVENT, launchCompletionEvent, HANDLE, 23203)
/* clang-format on */

#define NCCLSHIM_COLL_CONFIG_FIELD_ENUM_(id, field, kind, version) NCCLSHIM_COLL_CONFIG_##id,
typedef enum ncclshim_coll_config_field {
  NCCLSHIM_COLL_CONFIG_FIELDS(NCCLSHIM_COLL_CONFIG_FIELD_ENUM_) NCCLSHIM_COLL_CONFIG_FIELD_COUNT
} ncclshim_coll_config_field;

/* The same as ncclshim_nccl_config_init for an ncclCollConfig_t (from 2.32.3's nccl.h, or
 * ncclshim's): NCCL's defaults (ints UNDEF, forceAlgSelection 1, userProfilerTag 0,
 * pointers NULL), magic set, size = min(config_size, the 2.32.3 layout's 72), version = that
 * layout's release; nothing past config_size written. Needs no NCCL. OK; INVALID_ARGUMENT
 * when config is NULL or config_size does not reach `ext` (the header). */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_init(void *config, size_t config_size);
#define NCCLSHIM_COLL_CONFIG_INIT(config) ncclshim_coll_config_init((config), sizeof(*(config)))
/* As ncclshim_nccl_config_check: OK when the loaded NCCL honours the field (it has the
 * ...Config collectives: 2.32.3 and later) and it lies inside config_size; UNAVAILABLE with
 * the reason otherwise; INVALID_ARGUMENT for an unknown field. */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_check(const ncclshim_nccl *nccl,
                                                        size_t config_size,
                                                        ncclshim_coll_config_field field);
/* Set a field of a config made by ncclshim_coll_config_init, after those checks. Also
 * INVALID_ARGUMENT: config NULL or too small, not initialised, or the wrong kind for the field.
 * A refused field is left as it was. _str and _ptr store the pointer: the string, the
 * ncclConfigExt_t list and the event must outlive the calls that use the config. */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_int(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          int value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_str(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          const char *value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_u64(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          uint64_t value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_ptr(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          void *value);
/* "algSelection"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_coll_config_field_name(ncclshim_coll_config_field field);

/* ---- NCCL result codes ---------------------------------------------------------------- */

/* "ncclInvalidArgument" for 4; "ncclTimeout" for 8 (2.30.3+); "unknown" for any value no
 * release has used. Never indexes a table with an unchecked value. Static string;
 * thread-safe. */
NCCLSHIM_API const char *ncclshim_nccl_result_name(int result);
/* NCCL's own text for a result code, from ncclshim's table (no library needed); codes it
 * does not know give "unknown result code". Static string; thread-safe. */
NCCLSHIM_API const char *ncclshim_nccl_result_string(int result);
/* 1 for a result code some NCCL release has used (its name and text are known), else 0. */
NCCLSHIM_API int ncclshim_nccl_result_known(int result);
/* "ncclFloat32" for 7, ...; "unknown type" for values no release has. Static string (from a
 * const table: safe in a signal handler); thread-safe. */
NCCLSHIM_API const char *ncclshim_nccl_type_name(ncclDataType_t type);
/* The calling thread's last failing NCCL result code that ncclshim_nccl_check (comm.h) turned
 * into NCCLSHIM_NCCL_ERROR: the number behind ncclshim_last_error's text, for bindings that
 * must not parse it. It belongs to the message: 0 (ncclSuccess) while the thread's message is
 * anything else (none yet, or a later failure of another kind); a success leaves both as they
 * are. Each thread has its own. */
NCCLSHIM_API int ncclshim_last_nccl_result(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_H */
