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
 * errors, aborts or exits. Diagnostics (the trail, census, fingerprint, why something is
 * missing) are diag.h's; docs/reference.md lists every header.
 *
 * Conventions for every function below:
 *  - Errors: a failing ncclshim_status leaves a message for ncclshim_last_error() on the
 *    calling thread. Accessors cannot fail: they accept NULL and answer as for "no NCCL".
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

/* ---- The function table, and the default handle, volk-style ------------------------- */

#define NCCLSHIM_NCCL_TABLE_FIELD_(name, version, policy, role, returns, n, params) \
  ncclshim_pfn_##name name;
typedef struct ncclshim_nccl_table {
  NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_TABLE_FIELD_)
} ncclshim_nccl_table;

/* Load the default NCCL (once: ncclshim_nccl_default) and return its status, as
 * ncclshim_nccl_open returns it (OK, NOT_FOUND, ...). Thread-safe; later calls are cheap. */
NCCLSHIM_API ncclshim_status ncclshim_init(void);
/* Packed version of the default NCCL, 0 when none. */
NCCLSHIM_API int ncclshim_version(void);
/* The default table; loads on first use; never NULL. */
NCCLSHIM_API const ncclshim_nccl_table *ncclshim_table(void);

/* ---- Function facts ------------------------------------------------------------- */

/* Facts about a row of the list (status.h): its name ("ncclAllReduce"), the packed NCCL
 * version that first exported it (20300), and 1 when it is REQUIRED (a library without it is
 * refused). */
NCCLSHIM_API const char *ncclshim_nccl_function_name(enum ncclshim_nccl_function fn);
NCCLSHIM_API int ncclshim_nccl_function_version(enum ncclshim_nccl_function fn);
NCCLSHIM_API int ncclshim_nccl_function_required(enum ncclshim_nccl_function fn);

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

/* ---- Handles ----------------------------------------------------------------------- */

typedef struct ncclshim_nccl ncclshim_nccl;

typedef struct ncclshim_nccl_options {
  size_t size;            /* sizeof(ncclshim_nccl_options): lets the struct grow */
  const char *path;       /* the library file; NULL: NCCLSHIM_NCCL_LIBRARY, then the search */
  int min_version;        /* packed (22800 = 2.28.0); older candidates are refused and the search
                             goes on. 0: any 2.x */
  int refuse_second_copy; /* 1: a path naming another file than an NCCL already mapped is
                             refused (SECOND_COPY); 0: NCCLSHIM_REFUSE_SECOND_NCCL decides */
} ncclshim_nccl_options;
#define NCCLSHIM_NCCL_OPTIONS_INIT \
  { sizeof(ncclshim_nccl_options), NULL, 0, 0 }

/* The handle's functions, as status.h describes those both handles offer. ncclshim_nccl_open
 * searches (order: docs/reference.md), opens and binds; options NULL for the defaults; a path
 * given here or in NCCLSHIM_NCCL_LIBRARY is used alone. Returns OK or why no candidate was
 * accepted (the first refused one's reason: NOT_FOUND, LOAD_FAILED, NOT_NCCL, MISSING_SYMBOLS,
 * VERSION_TOO_OLD, WRONG_MAJOR, BAD_VERSION), INVALID_ARGUMENT (out NULL, options->size too
 * small, min_version negative, an empty path, a relative NCCLSHIM_NCCL_LIBRARY), SECOND_COPY
 * or OUT_OF_MEMORY. Unless out is NULL, options unusable or memory short, *out is set, also on
 * failure, to a handle that describes the outcome and whose table is callable either way.
 * ncclshim_nccl_close keeps the library mapped (never dlclose'd) and the table's pointers
 * valid, not the handle's strings and attempts; it ignores NULL and the default handle.
 * ncclshim_nccl_default is loaded once (pthread_once) and never NULL. The table returns
 * ncclInvalidUsage without NCCL, ncclInvalidArgument for a function the NCCL lacks. The path
 * is that of the file defining the NCCL functions (for a wrapper that only links NCCL, that
 * NCCL's file; the trail, diag.h, names the wrapper). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_open(const ncclshim_nccl_options *options,
                                                ncclshim_nccl **out);
NCCLSHIM_API void ncclshim_nccl_close(ncclshim_nccl *handle);
NCCLSHIM_API ncclshim_nccl *ncclshim_nccl_default(void);
NCCLSHIM_API const ncclshim_nccl_table *ncclshim_nccl_functions(const ncclshim_nccl *handle);
NCCLSHIM_API ncclshim_status ncclshim_nccl_status(const ncclshim_nccl *handle);
NCCLSHIM_API const char *ncclshim_nccl_message(const ncclshim_nccl *handle);
NCCLSHIM_API const char *ncclshim_nccl_path(const ncclshim_nccl *handle);
NCCLSHIM_API ncclshim_found_via ncclshim_nccl_found_via(const ncclshim_nccl *handle);
NCCLSHIM_API int ncclshim_nccl_preloaded(const ncclshim_nccl *handle);
/* Packed version of the loaded library, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version(const ncclshim_nccl *nccl);
/* The raw ncclGetVersion code, 0 when none. */
NCCLSHIM_API int ncclshim_nccl_version_code(const ncclshim_nccl *nccl);
/* The capabilities present, as NCCLSHIM_CAP_BIT(cap) bits; 0 without NCCL. */
NCCLSHIM_API uint64_t ncclshim_nccl_capabilities(const ncclshim_nccl *nccl);
/* 1 when the loaded NCCL has `cap` (its version and functions: NCCLSHIM_CAPABILITIES);
 * 0 otherwise, also without NCCL and for an unknown value. */
NCCLSHIM_API int ncclshim_nccl_has(const ncclshim_nccl *nccl, ncclshim_capability cap);
/* 1 when the loaded library exports this function; 0 without NCCL or for an unknown fn. */
NCCLSHIM_API int ncclshim_nccl_has_function(const ncclshim_nccl *nccl,
                                            enum ncclshim_nccl_function fn);

/* ---- Versions ---------------------------------------------------------------------- */

/* ncclshim's own version, "MAJOR.MINOR.PATCH" (meson.build's project version). */
NCCLSHIM_API const char *ncclshim_library_version(void);

/* An ncclGetVersion code of either encoding (<= 2.8: X*1000+Y*100+Z, then X*10000+Y*100+Z)
 * as MAJOR*10000+MINOR*100+PATCH, parts filled (each may be NULL); 0 for a code below 1000. */
NCCLSHIM_API int ncclshim_decode_version(int code, int *major, int *minor, int *patch);
/* "2.28.9" for 22809 into buf of `size` bytes (cut to fit, always terminated; nothing
 * written when size is 0); "none" for packed <= 0. Returns buf. */
NCCLSHIM_API const char *ncclshim_format_version(int packed, char *buf, size_t size);

/* ---- NCCL result codes ---------------------------------------------------------------- */

/* "ncclInvalidArgument" for 4; "ncclTimeout" for 8 (2.30.3+); "unknown" for any value no
 * release has used. Static string; thread-safe. */
NCCLSHIM_API const char *ncclshim_nccl_result_name(int result);
/* NCCL's own text for a result code, from ncclshim's table (no library needed); "unknown
 * result code" for others. */
NCCLSHIM_API const char *ncclshim_nccl_result_string(int result);
/* 1 for a result code some NCCL release has used (its name and text are known), else 0. */
NCCLSHIM_API int ncclshim_nccl_result_known(int result);
/* "ncclFloat32" for 7, ...; "unknown type" for values no release has (safe in a signal
 * handler). */
NCCLSHIM_API const char *ncclshim_nccl_type_name(ncclDataType_t type);
/* The NCCL result behind the calling thread's NCCLSHIM_NCCL_ERROR message (ncclshim_nccl_check,
 * comm.h), for bindings that must not parse the text; 0 while the thread's message is of
 * another kind or none. A success leaves it. Each thread has its own. */
NCCLSHIM_API int ncclshim_last_nccl_result(void);

#ifdef __cplusplus
}
#endif

/* ncclConfig_t and ncclCollConfig_t help: part of the core API, in a file of its own. */
#include "ncclshim/config.h"

#endif /* NCCLSHIM_H */
