/* What one communicator can really do, and whether the ranks of a job agree with each other.
 *
 * The library-level capabilities (ncclshim_nccl_has, NCCLSHIM_CAPABILITIES) answer "could the
 * loaded NCCL do it?": its version and functions. The communicator capabilities below answer
 * "does it, here, on this communicator?": NCCL 2.29 and later return success with a NULL
 * window where the system cannot register one, and the device API needs what
 * ncclCommQueryProperties reports. docs/collectives.md, "What a communicator can do". */
#ifndef NCCLSHIM_COMM_QUERY_H
#define NCCLSHIM_COMM_QUERY_H

#include "ncclshim/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(ID, "name"). New rows go at the end. */
/* clang-format off */
#define NCCLSHIM_COMM_CAPABILITIES(X) \
  X(SYMMETRIC_WINDOWS, "symmetric-windows") /* a trial window registers (non-NULL) */ \
  X(DEVICE_API,        "device-api")        /* ncclCommQueryProperties: deviceApiSupport */ \
  X(MULTIMEM,          "multimem")          /* ...: multimemSupport (NVLS) */ \
  X(GIN,               "gin")               /* ...: a GPU-initiated network type */ \
  X(HOST_RMA,          "host-rma")          /* ...: hostRmaSupport (2.29.4+) */
/* clang-format on */

#define NCCLSHIM_COMM_CAPABILITY_ENUM_(id, name) NCCLSHIM_COMM_CAP_##id,
typedef enum ncclshim_comm_capability {
  NCCLSHIM_COMM_CAPABILITIES(NCCLSHIM_COMM_CAPABILITY_ENUM_) NCCLSHIM_COMM_CAPABILITY_COUNT
} ncclshim_comm_capability;

/* "symmetric-windows"; NULL for an unknown value. The value for a name, -1 if none. */
NCCLSHIM_API const char *ncclshim_comm_capability_name(ncclshim_comm_capability cap);
NCCLSHIM_API int ncclshim_comm_capability_from_name(const char *name);

/* An answer that may not be known. Stable values. */
typedef enum ncclshim_answer {
  NCCLSHIM_ANSWER_NO = 0,
  NCCLSHIM_ANSWER_YES = 1,
  NCCLSHIM_ANSWER_UNKNOWN = 2 /* the loaded NCCL cannot say (2.28 has no ncclCommQueryProperties) */
} ncclshim_answer;

/* Does this READY communicator have `cap`? *answer gets YES, NO or UNKNOWN and `reason` (may
 * be NULL; cut to fit) one line saying why. OK with the answer; INVALID_ARGUMENT (comm or
 * answer NULL, unknown cap, timeout_ms < 0, a communicator not READY); TIMEOUT / NCCL_ERROR
 * from the trial below.
 *  SYMMETRIC_WINDOWS: on the first ask, a trial: a 4096-byte ncclshim_symmem_alloc and free.
 *    Window registration is collective, so the FIRST ask is collective: every rank asks at
 *    the same point (later asks answer from the cache, as does any ncclshim_symmem_alloc that
 *    already saw a window or a NULL one). No when the library lacks SYMMETRIC_MEMORY.
 *  DEVICE_API, MULTIMEM, GIN, HOST_RMA: ncclCommQueryProperties (NCCL 2.29.2+), local;
 *    UNKNOWN on an NCCL with the device API but without that function (2.28), NO without the
 *    device API. HOST_RMA is UNKNOWN on 2.29.2 and 2.29.3, whose struct lacks the field. */
NCCLSHIM_API ncclshim_status ncclshim_comm_has(ncclshim_comm *comm, ncclshim_comm_capability cap,
                                               int timeout_ms, ncclshim_answer *answer,
                                               char *reason, size_t size);

/* What ncclCommQueryProperties says of the communicator, in ncclshim's own struct. */
typedef struct ncclshim_comm_facts {
  size_t size;         /* sizeof(ncclshim_comm_facts): lets the struct grow */
  int rank, nranks;    /* as NCCL counts them */
  int cuda_device;     /* CUDA ordinal */
  int nvml_device;     /* NVML index */
  int device_api;      /* 1: ncclDevCommCreate can work (NCCL's symmetric support) */
  int multimem;        /* 1: NVLink SHARP (NVLS) multimem */
  int gin_type;        /* 0 none, 2 proxy, 3 GDAKI (NCCL's ncclGinType_t) */
  int railed_gin_type; /* the same for the rail team; -1 unknown (2.29.2, 2.29.3) */
  int lsa_teams;       /* NVLink (load/store) teams; -1 unknown */
  int host_rma;        /* 1: host-initiated RMA; -1 unknown */
} ncclshim_comm_facts;
#define NCCLSHIM_COMM_FACTS_INIT \
  { sizeof(ncclshim_comm_facts), -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 }

/* Fill *facts from ncclCommQueryProperties on a READY communicator. OK; UNAVAILABLE (the
 * loaded NCCL lacks the function: "needs NCCL >= 2.29.2; loaded 2.28.9"); INVALID_ARGUMENT;
 * NCCL_ERROR (checked message). Local: no other rank takes part. */
NCCLSHIM_API ncclshim_status ncclshim_comm_query_facts(ncclshim_comm *comm,
                                                       ncclshim_comm_facts *facts);
/* "none", "proxy", "gdaki", "unknown". */
NCCLSHIM_API const char *ncclshim_gin_type_name(int gin_type);

/* ---- A job that agrees with itself ----------------------------------------------------- */

/* Collective: every rank of the communicator calls it, after init and before real work. One
 * all-gather of each rank's fingerprint (NCCLSHIM_AGREE_RECORD bytes each): the NCCL version,
 * build and library identity, the CUDA driver, the plugins NCCL would load (kind, file name,
 * ABI symbol taken) and the NCCL_* settings of the documented list (docs/collectives.md,
 * "A job that agrees with itself"). OK when every rank's record equals rank 0's.
 * UNAVAILABLE when they differ (ranks set up unlike each other may hang or
 * compute differently later), with every differing rank named:
 * "ranks disagree with rank 0 (host a): rank 1 (host b): NCCL_PROTO=Simple, rank 0 has it
 * unset". TIMEOUT (the all-gather did not finish in timeout_ms, as when a rank never calls
 * it; its device buffers are then left allocated, since NCCL may still write them);
 * INVALID_ARGUMENT; CUDA_ERROR / DRIVER_UNAVAILABLE (no device buffers); NCCL_ERROR. Needs
 * the communicator's CUDA context current on the calling thread (as any NCCL call does). */
NCCLSHIM_API ncclshim_status ncclshim_comm_agree(ncclshim_comm *comm, int timeout_ms);

/* The same on a bare ncclComm_t of `nranks` ranks (the drop-in's hook after each init):
 * nccl NULL for the default handle. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_agree(ncclshim_nccl *nccl, ncclComm_t comm, int nranks,
                                                 int timeout_ms);

/* This process's fingerprint record, as ncclshim_comm_agree sends it: "key=value" lines.
 * Written into buf (cut to fit, always terminated). Returns buf. */
NCCLSHIM_API const char *ncclshim_agree_record(ncclshim_nccl *nccl, char *buf, size_t size);

enum { NCCLSHIM_AGREE_RECORD = 1024 };

/* ---- Device-API mismatches ------------------------------------------------------------- */

/* Which versions meet in a device-API call: the loaded release's, and what the caller's
 * ncclDevCommRequirements carries (`reqs`, may be NULL): from 2.29 it starts with size,
 * NCCL_API_MAGIC and the version of the headers it was built with; a 2.28 layout carries
 * none (and 2.28.3 and 2.28.9 differ). One line into buf (cut to fit). Returns buf. Only
 * the first 16 bytes of *reqs are read (every release's struct is longer). */
NCCLSHIM_API const char *ncclshim_devapi_explain(const ncclshim_nccl *nccl, const void *reqs,
                                                 char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_COMM_QUERY_H */
