/* The CUDA driver handle and the pieces of the binding that share it. */
#ifndef NCCLSHIM_CUDA_HANDLE_H
#define NCCLSHIM_CUDA_HANDLE_H

#include "src/handle.h"
#include "ncclshim/cuda.h"

/* The table every handle starts with: each entry reports that no driver is loaded. */
extern const ncclshim_cuda_table ncs_cuda_absent_table;

struct ncclshim_cuda {
  ncs_handle core;           /* first: the lifecycle shared with the NCCL binding */
  ncclshim_cuda_table table; /* what ncclshim_cuda_functions hands out */
  int driver_version;        /* cuDriverGetVersion; 0 when none */
  int is_stub;               /* the stub was found (at load, or by cuInit: written atomically) */
  ncclshim_cuda_bootstrap bootstrap;
  int abi[NCCLSHIM_CUDA_FUNCTION_COUNT]; /* version each entry was bound at; 0: missing */
  int init_pid; /* the process that ran cuInit through this handle (atomic); 0: none */
};

/* Point the entries the driver lacks (abi[fn] == 0) at stubs that say so. */
void ncs_cuda_fill_missing(ncclshim_cuda *cuda);

/* Resolve the table from an opened driver of version `driver_version`. Returns OK, or
 * VERSION_TOO_OLD / MISSING_SYMBOLS with the reason; the handle is written only on OK. */
ncclshim_status ncs_cuda_bind(ncclshim_cuda *cuda, void *library, int driver_version, char *reason,
                              size_t size);

/* The list's exported-name suffix of fn's ABI: "" or "_v2". */
const char *ncs_cuda_export_suffix(enum ncclshim_cuda_function fn);
/* The older ABI of fn (same signature) and its export suffix, or 0 when it has none. */
int ncs_cuda_older_abi(enum ncclshim_cuda_function fn, const char **suffix);

/* The checks every helper starts with: a handle, a driver, not a forked child. Returns OK or
 * the failure (message set, prefixed with `what`). */
ncclshim_status ncs_cuda_usable(const ncclshim_cuda *cuda, const char *what);
/* The status and message for a driver call that answered `result`: "what: fn failed:
 * CUDA_ERROR_X (n): text", plus a hint when cuInit was not called through this handle. */
ncclshim_status ncs_cuda_call_failed(const ncclshim_cuda *cuda, const char *what,
                                     enum ncclshim_cuda_function fn, ncclshim_cu_result result);

/* ncclshim's own name and text for a CUresult; NULL for a code it does not know. */
const char *ncs_cuda_builtin_name(int result);
const char *ncs_cuda_builtin_string(int result);

#endif
