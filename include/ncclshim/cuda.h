/* ncclshim's CUDA driver binding: libcuda.so.1 loaded at run time, without cuda.h.
 *
 *   ncclshim_cuda_default()        the process-wide driver handle, loaded once (no cuInit)
 *   ncclshim_cuda_init(cuda)       cuInit(0), explicitly, in the process that uses the GPU
 *   ncclshim_cuda_functions(cuda)  the driver functions: t->cuStreamCreate(&s, 0)
 *   ncclshim_cuda_stream_*(), _event_*(), _device_*()  helpers returning ncclshim_status
 *
 * Loading only maps the driver and reads its version: it never calls cuInit, creates a
 * context or touches NVML, so it is safe before fork(). Every table entry is callable: with
 * no driver an entry returns CUDA_ERROR_NOT_INITIALIZED (3), and one the loaded driver lacks
 * returns CUDA_ERROR_NOT_SUPPORTED (801); both leave a message naming the function (and the
 * driver version it needs) for ncclshim_last_error(). cuGetErrorName/cuGetErrorString
 * entries always answer, from ncclshim's own table when the driver cannot.
 *
 * The helpers return an ncclshim_status and, on failure, leave a message in
 * ncclshim_last_error() that names the helper, the driver function and its CUresult (name
 * and text). They write their out-parameters only on success. They never create or change
 * the calling thread's context, except ncclshim_cuda_device_activate: the caller owns its
 * streams, events and the context they live in. Failures common to every helper:
 *   INVALID_ARGUMENT    cuda (or a required out-parameter) is NULL
 *   DRIVER_UNAVAILABLE  the handle holds no usable driver (see ncclshim_cuda_message)
 *   FORKED              ncclshim_cuda_init ran in a parent process, this is a forked child
 *   CUDA_ERROR          a driver call failed (a hint is added when cuInit was not called);
 *                       a call answering CUDA_ERROR_NO_DEVICE gives NO_DEVICE instead, and
 *                       CUDA_ERROR_STUB_LIBRARY gives DRIVER_UNAVAILABLE
 * The helpers use only REQUIRED functions of the list, which every accepted driver has.
 * Every function here is thread-safe: after ncclshim_cuda_open a handle changes only through
 * ncclshim_cuda_init, atomically. */
#ifndef NCCLSHIM_CUDA_H
#define NCCLSHIM_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "ncclshim/cuda_functions.h"
#include "ncclshim/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The function table ------------------------------------------------------------ */

/* cuda.h #defines the base names of V2 functions to their _v2 names (cuMemAlloc ->
 * cuMemAlloc_v2). Code that includes cuda.h first sees fields already renamed; otherwise each
 * such field answers to both spellings, so that cuda.h included later still finds it. */
#define NCCLSHIM_CUDA_FIELD_BASE_(type, name) type name;
#ifdef __cuda_cuda_h__
#define NCCLSHIM_CUDA_FIELD_V2_(type, name) type name;
#else
#define NCCLSHIM_CUDA_FIELD_V2_(type, name) \
  union {                                   \
    type name;                              \
    type name##_v2;                         \
  };
#endif
#define NCCLSHIM_CUDA_TABLE_FIELD_(name, ask, policy, abi, n, params) \
  NCCLSHIM_CUDA_FIELD_##abi##_(ncclshim_cuda_pfn_##name, name)
typedef struct ncclshim_cuda_table {
  NCCLSHIM_CUDA_FUNCTIONS(NCCLSHIM_CUDA_TABLE_FIELD_)
} ncclshim_cuda_table;

/* Facts about a row of the list (status.h): "cuMemAlloc", its `ask` version (3020), required
 * or not. */
NCCLSHIM_API const char *ncclshim_cuda_function_name(enum ncclshim_cuda_function fn);
NCCLSHIM_API int ncclshim_cuda_function_version(enum ncclshim_cuda_function fn);
NCCLSHIM_API int ncclshim_cuda_function_required(enum ncclshim_cuda_function fn);

/* ---- Handles ----------------------------------------------------------------------- */

typedef struct ncclshim_cuda ncclshim_cuda;

typedef struct ncclshim_cuda_options {
  size_t size;      /* sizeof(ncclshim_cuda_options): lets the struct grow */
  const char *path; /* the driver file; NULL: NCCLSHIM_CUDA_LIBRARY, then the search */
} ncclshim_cuda_options;
#define NCCLSHIM_CUDA_OPTIONS_INIT \
  { sizeof(ncclshim_cuda_options), NULL }

/* The handle's functions (those both handles offer: status.h):
 * ncclshim_cuda_open finds, opens and binds a CUDA driver. The search, in order:
 * options->path, else the absolute path in NCCLSHIM_CUDA_LIBRARY (either one is used alone:
 * if it is unusable the open fails, it never falls back); else a libcuda.so.1 already mapped
 * in the process; else the system loader's search for libcuda.so.1. The unversioned
 * libcuda.so is never searched for: it is where the toolkit's stub lives.
 * Returns the status and sets *out to a handle that describes the outcome and whose table is
 * callable either way, unless out is NULL, options->size is too small or memory runs out:
 *   OK; NOT_FOUND; LOAD_FAILED (dlopen's reason kept); NOT_NCCL (the file is not a CUDA
 *   driver: it has no cuDriverGetVersion); DRIVER_UNAVAILABLE (the toolkit's stub library,
 *   named in the message); BAD_VERSION (cuDriverGetVersion failed); VERSION_TOO_OLD or
 *   MISSING_SYMBOLS (a required function is missing; the message names it and the driver
 *   version it needs); INVALID_ARGUMENT (out is NULL, options->size too small, empty path).
 * Thread-safe. Never calls cuInit. Close the handle with ncclshim_cuda_close.
 * ncclshim_cuda_close frees the handle's bookkeeping. The driver stays mapped (it is never
 * dlclose'd) and pointers taken from the table stay valid. NULL and the default handle are
 * ignored. Not thread-safe with other uses of the same handle.
 * ncclshim_cuda_default: the process-wide handle, opened on first use with the default
 * options (pthread_once; no cuInit), in the library's static storage: never NULL.
 * The accessors (ncclshim_cuda_status, _message, _path, _found_via, _preloaded,
 * _attempt_count, _attempt) accept NULL, answering as for "out of memory". The message
 * reads "CUDA driver 13.0 from /usr/lib/libcuda.so.580.1 (...)", or why none is usable; the
 * path is the driver file actually mapped. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_open(const ncclshim_cuda_options *options,
                                                ncclshim_cuda **out);
NCCLSHIM_API void ncclshim_cuda_close(ncclshim_cuda *handle);
NCCLSHIM_API ncclshim_cuda *ncclshim_cuda_default(void);
NCCLSHIM_API const ncclshim_cuda_table *ncclshim_cuda_functions(const ncclshim_cuda *handle);
NCCLSHIM_API ncclshim_status ncclshim_cuda_status(const ncclshim_cuda *handle);
NCCLSHIM_API const char *ncclshim_cuda_message(const ncclshim_cuda *handle);
NCCLSHIM_API const char *ncclshim_cuda_path(const ncclshim_cuda *handle);
NCCLSHIM_API ncclshim_found_via ncclshim_cuda_found_via(const ncclshim_cuda *handle);
NCCLSHIM_API int ncclshim_cuda_preloaded(const ncclshim_cuda *handle);
NCCLSHIM_API size_t ncclshim_cuda_attempt_count(const ncclshim_cuda *handle);
NCCLSHIM_API const ncclshim_attempt *ncclshim_cuda_attempt(const ncclshim_cuda *handle,
                                                           size_t index);

/* ---- Accessors: each accepts NULL (answering as for "out of memory") ------------------ */

/* The cuDriverGetVersion answer (13000 for CUDA 13.0), 0 when none; *major and *minor (each
 * may be NULL) get it decoded (13, 0). */
NCCLSHIM_API int ncclshim_cuda_driver_version(const ncclshim_cuda *cuda, int *major, int *minor);
/* "13.0" for 13000 into buf (always terminated; "none" for 0); returns buf. */
NCCLSHIM_API const char *ncclshim_cuda_format_version(int version, char *buf, size_t size);
/* 1 when the library found is the CUDA toolkit's link-time stub (a path under stubs/, or
 * CUDA_ERROR_STUB_LIBRARY from cuDriverGetVersion or cuInit); its path is then in the
 * message. */
NCCLSHIM_API int ncclshim_cuda_is_stub(const ncclshim_cuda *cuda);

/* How the table's entry points were obtained. */
typedef enum ncclshim_cuda_bootstrap {
  NCCLSHIM_CUDA_BOOTSTRAP_NONE = 0,           /* no driver bound */
  NCCLSHIM_CUDA_BOOTSTRAP_DLSYM = 1,          /* driver < 11.3: exported names */
  NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS = 2,   /* cuGetProcAddress (11.3 ABI, 4 arguments) */
  NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2 = 3 /* cuGetProcAddress_v2 (12.0 ABI) */
} ncclshim_cuda_bootstrap;
/* Which bootstrap bound the table; NCCLSHIM_CUDA_BOOTSTRAP_NONE without a driver. */
NCCLSHIM_API ncclshim_cuda_bootstrap ncclshim_cuda_bootstrap_used(const ncclshim_cuda *cuda);
/* "none", "dlsym", "cuGetProcAddress", "cuGetProcAddress_v2"; "unknown" otherwise. */
NCCLSHIM_API const char *ncclshim_cuda_bootstrap_name(ncclshim_cuda_bootstrap bootstrap);

/* 1 when the loaded driver provides the function. */
NCCLSHIM_API int ncclshim_cuda_has_function(const ncclshim_cuda *cuda,
                                            enum ncclshim_cuda_function fn);
/* The ABI version the table's entry was bound at (the cudaVersion asked of cuGetProcAddress,
 * or the ABI of the exported name found by dlsym); 0 when the function is unavailable. */
NCCLSHIM_API int ncclshim_cuda_function_abi(const ncclshim_cuda *cuda,
                                            enum ncclshim_cuda_function fn);

/* ---- Initialisation and results ----------------------------------------------------- */

/* cuInit(0) through this handle, and remember this process's pid. Call it after any fork(),
 * in the process that uses the GPU; calling it again in the same process is cheap.
 * Returns OK; DRIVER_UNAVAILABLE (no driver, or cuInit answered CUDA_ERROR_STUB_LIBRARY:
 * the message names the file); NO_DEVICE (CUDA_ERROR_NO_DEVICE); FORKED (this handle was
 * initialised in a parent process: CUDA cannot be used in a child forked after cuInit);
 * CUDA_ERROR (any other answer, named; for CUDA_ERROR_NOT_INITIALIZED the message adds that
 * a cuInit before fork() by any component causes it); INVALID_ARGUMENT (cuda is NULL).
 * Thread-safe. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_init(ncclshim_cuda *cuda);

/* "CUDA_ERROR_NOT_READY" and "device not ready": the driver's texts when cuda holds a loaded
 * driver that knows the code, else ncclshim's table (which knows the stub's 34, whose text
 * the stub cannot give). cuda may be NULL. Unknown codes give "CUDA_ERROR_UNRECOGNIZED" and
 * "unrecognized CUDA error code". The strings are static. Thread-safe. */
NCCLSHIM_API const char *ncclshim_cuda_result_name(const ncclshim_cuda *cuda, int result);
NCCLSHIM_API const char *ncclshim_cuda_result_string(const ncclshim_cuda *cuda, int result);

/* ---- Devices ------------------------------------------------------------------------ */

/* The number of CUDA devices visible to this process (needs ncclshim_cuda_init). */
NCCLSHIM_API ncclshim_status ncclshim_cuda_device_count(const ncclshim_cuda *cuda, int *count);

/* Retain device `ordinal`'s primary context and make it current on the calling thread;
 * *ctx (may be NULL) gets the context. Pair with ncclshim_cuda_device_release. If making it
 * current fails, the retain is undone. Needs ncclshim_cuda_init. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_device_activate(const ncclshim_cuda *cuda, int ordinal,
                                                           CUcontext *ctx);
/* Release one retain of device `ordinal`'s primary context. It does not change the calling
 * thread's current context: after the last release the context is gone, so make another
 * current before using CUDA on this thread. Releasing more often than retaining is a
 * CUDA_ERROR (CUDA_ERROR_INVALID_CONTEXT). */
NCCLSHIM_API ncclshim_status ncclshim_cuda_device_release(const ncclshim_cuda *cuda, int ordinal);

/* ---- Streams and events (in the calling thread's current context) -------------------- */

/* cuStreamCreate(flags): NCCLSHIM_CU_STREAM_DEFAULT or NCCLSHIM_CU_STREAM_NON_BLOCKING. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_stream_create(const ncclshim_cuda *cuda,
                                                         unsigned int flags, CUstream *stream);
/* Destroy a stream made by ncclshim_cuda_stream_create (or any cuStreamCreate). Work already
 * queued still completes. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_stream_destroy(const ncclshim_cuda *cuda,
                                                          CUstream stream);
/* Ask, without waiting, whether all work queued on the stream has finished: OK with
 * *ready = 1 when it has, OK with *ready = 0 when work is still pending
 * (CUDA_ERROR_NOT_READY is not an error); CUDA_ERROR for any other answer. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_stream_query(const ncclshim_cuda *cuda, CUstream stream,
                                                        int *ready);
/* Block until all work queued on the stream has finished; CUDA_ERROR reports a failure of
 * that work too (possibly of earlier work on the context). */
NCCLSHIM_API ncclshim_status ncclshim_cuda_stream_synchronize(const ncclshim_cuda *cuda,
                                                              CUstream stream);
/* Make future work on `stream` wait until `event`'s last record has completed (device-side;
 * the caller does not block). */
NCCLSHIM_API ncclshim_status ncclshim_cuda_stream_wait_event(const ncclshim_cuda *cuda,
                                                             CUstream stream, CUevent event);
/* cuEventCreate(flags): NCCLSHIM_CU_EVENT_* (DISABLE_TIMING makes record/wait cheapest). */
NCCLSHIM_API ncclshim_status ncclshim_cuda_event_create(const ncclshim_cuda *cuda,
                                                        unsigned int flags, CUevent *event);
/* Destroy an event (cuEventDestroy_v2) without waiting: one whose record is still pending
 * is released when it completes. INVALID_ARGUMENT for a NULL event. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_event_destroy(const ncclshim_cuda *cuda, CUevent event);
/* Record `event` at the current end of `stream`'s work. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_event_record(const ncclshim_cuda *cuda, CUevent event,
                                                        CUstream stream);

/* ---- Device description ------------------------------------------------------------- */

/* The answer to one yes/no query. Zero means "failed or never asked", so that fields a
 * caller's newer struct has and an older library does not fill read as unknown. */
typedef enum ncclshim_cuda_support {
  NCCLSHIM_CUDA_QUERY_FAILED = 0, /* the query failed: see `result`; NOT "unsupported" */
  NCCLSHIM_CUDA_UNSUPPORTED = 1,
  NCCLSHIM_CUDA_SUPPORTED = 2
} ncclshim_cuda_support;
/* "query-failed", "unsupported", "supported"; "unknown" otherwise. */
NCCLSHIM_API const char *ncclshim_cuda_support_name(ncclshim_cuda_support support);

typedef struct ncclshim_cuda_fact {
  ncclshim_cuda_support support;
  /* The query's CUresult: 0 when answered. For QUERY_FAILED, why. An attribute number the
   * driver does not know (CUDA_ERROR_INVALID_VALUE, 1, from a driver older than the
   * attribute) is UNSUPPORTED with result 1: that driver cannot support it. A function the
   * driver lacks is QUERY_FAILED with CUDA_ERROR_NOT_SUPPORTED (801). */
  ncclshim_cu_result result;
} ncclshim_cuda_fact;

/* Bits of ncclshim_cuda_device_info.supported / .failed: a compact summary that ranks can
 * all-gather and compare. */
#define NCCLSHIM_CUDA_FACT_VMM (1u << 0)
#define NCCLSHIM_CUDA_FACT_POSIX_FD_HANDLE (1u << 1)
#define NCCLSHIM_CUDA_FACT_FABRIC_HANDLE (1u << 2)
#define NCCLSHIM_CUDA_FACT_MULTICAST (1u << 3)
#define NCCLSHIM_CUDA_FACT_GPU_DIRECT_RDMA (1u << 4)

#define NCCLSHIM_CUDA_MAX_PEERS 64

typedef struct ncclshim_cuda_device_info {
  size_t size; /* set by the caller: sizeof(ncclshim_cuda_device_info) */
  int ordinal;
  char name[256];                      /* "NVIDIA H200" */
  int cc_major, cc_minor;              /* compute capability 9.0 */
  int multiprocessors;                 /* SM count */
  size_t total_memory;                 /* bytes */
  int pci_domain, pci_bus, pci_device; /* as in nvidia-smi's 00000000:1B:00.0 */
  ncclshim_cuda_fact uuid_query;       /* SUPPORTED when `uuid` was read (cuDeviceGetUuid_v2) */
  CUuuid uuid;                         /* "GPU-xxxxxxxx-..." in nvidia-smi */
  ncclshim_cuda_fact vmm;              /* cuMem* virtual memory management */
  ncclshim_cuda_fact posix_fd_handle;  /* cuMem handles exportable as POSIX fds */
  ncclshim_cuda_fact fabric_handle;    /* ... as fabric handles (MNNVL) */
  ncclshim_cuda_fact multicast;        /* NVLink SHARP multicast objects */
  ncclshim_cuda_fact gpu_direct_rdma;
  int peer_count; /* entries of peer_access filled: min(device count, MAX_PEERS) */
  /* peer_access[p]: can this device access device p's memory (cuDeviceCanAccessPeer). The
   * entry for the device itself is the driver's answer too (a device is not its own peer). */
  ncclshim_cuda_fact peer_access[NCCLSHIM_CUDA_MAX_PEERS];
  uint32_t supported; /* NCCLSHIM_CUDA_FACT_* bits whose fact is SUPPORTED */
  uint32_t failed;    /* NCCLSHIM_CUDA_FACT_* bits whose query failed */
} ncclshim_cuda_device_info;
#define NCCLSHIM_CUDA_DEVICE_INFO_INIT \
  { .size = sizeof(ncclshim_cuda_device_info) }

/* Describe device `ordinal` into *info, whose `size` the caller sets (a struct from an older
 * header gets only its own fields; `size` is never written). Identity facts (name, compute
 * capability, SM count, memory, PCI location) must all be read, or the call fails with
 * CUDA_ERROR and *info is untouched; each yes/no fact, and the UUID, is reported as its own
 * tri-state, so one failed query is kept as failed and never reads as "unsupported".
 * Needs ncclshim_cuda_init; needs no context. INVALID_ARGUMENT also when info->size is too
 * small to hold the identity facts. */
NCCLSHIM_API ncclshim_status ncclshim_cuda_describe_device(const ncclshim_cuda *cuda, int ordinal,
                                                           ncclshim_cuda_device_info *info);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_CUDA_H */
