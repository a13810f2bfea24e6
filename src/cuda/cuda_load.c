/* The CUDA binding's part in the handle lifecycle: stub check and version first, then the
 * table; the default handle; the accessors of its own fields. Nothing here calls cuInit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/dl.h"
#include "src/internal.h"
#include "cuda_handle.h"

/* The search names the file in front of the reason (and the real file after it, when the
 * name tried was a link or a SONAME). is_stub is the one note a refusal leaves on the handle:
 * "a stub was found" is what a failed search most needs to say. */
static ncclshim_status refuse_stub(ncclshim_cuda *cuda, const char *how, char *reason,
                                   size_t size) {
  cuda->is_stub = 1;
  snprintf(reason, size, "the CUDA toolkit's stub library (%s), not a CUDA driver", how);
  return NCCLSHIM_DRIVER_UNAVAILABLE;
}

/* The search's accept step: is this a usable driver? Reads the version (safe without cuInit,
 * and before fork), then binds the table. */
static ncclshim_status check_driver(ncclshim_cuda *cuda, void *library, const char *path,
                                    char *reason, size_t size) {
  if (strstr(path, "/stubs/") != NULL)
    return refuse_stub(cuda, "it lies in a stubs/ directory", reason, size);
  ncshl_fn symbol = ncshl_symbol(library, "cuDriverGetVersion");
  if (symbol == NULL) {
    snprintf(reason, size, "no cuDriverGetVersion: not a CUDA driver");
    return NCCLSHIM_NOT_NCCL;
  }
  int version = 0;
  ncclshim_cu_result rc = ((ncclshim_cuda_pfn_cuDriverGetVersion)symbol)(&version);
  if (rc == NCCLSHIM_CUDA_ERROR_STUB_LIBRARY)
    return refuse_stub(cuda, "cuDriverGetVersion answered CUDA_ERROR_STUB_LIBRARY (34)", reason,
                       size);
  if (rc != NCCLSHIM_CUDA_SUCCESS) {
    snprintf(reason, size, "cuDriverGetVersion failed: %s (%d): %s",
             ncclshim_cuda_result_name(NULL, rc), rc, ncclshim_cuda_result_string(NULL, rc));
    return NCCLSHIM_BAD_VERSION;
  }
  if (version <= 0) {
    snprintf(reason, size, "cuDriverGetVersion answered %d, which is no CUDA version", version);
    return NCCLSHIM_BAD_VERSION;
  }
  ncclshim_status status = ncs_cuda_bind(cuda, library, version, reason, size);
  if (status == NCCLSHIM_OK) cuda->is_stub = 0; /* a stub refused earlier is not what loaded */
  return status;
}

static ncshl_decision accept_cuda(void *context, void *library, const char *path, char *reason,
                                  size_t size) {
  return (ncshl_decision){check_driver(context, library, path, reason, size), NULL};
}

static void describe_success(const ncs_handle *core, char *text, size_t size) {
  const ncclshim_cuda *cuda = (const ncclshim_cuda *)core;
  char have[16];
  snprintf(text, size, "CUDA driver %s from %s (%s%s, entry points via %s)",
           ncclshim_cuda_format_version(cuda->driver_version, have, sizeof(have)), core->path,
           ncclshim_found_via_name(core->via), core->preloaded ? ", already loaded" : "",
           ncclshim_cuda_bootstrap_name(cuda->bootstrap));
}

/* The driver's search: an override alone, else a driver already mapped, else the system
 * loader. No directories of its own: the driver comes with the system (ld.so cache,
 * container runtime), and a directory guess is how stubs get picked up. */
static const ncshl_step_spec cuda_steps[] = {
    {NCSHL_STEP_EXPLICIT, NULL},
    {NCSHL_STEP_ENVIRONMENT, NULL},
    {NCSHL_STEP_PRELOADED, NULL},
    {NCSHL_STEP_SYSTEM, NULL},
};

static const ncs_binding cuda_binding = {
    .kind = NCCLSHIM_BINDING_CUDA,
    .who = "ncclshim cuda",
    .search =
        {
            .steps = cuda_steps,
            .step_count = sizeof(cuda_steps) / sizeof(cuda_steps[0]),
            .soname = "libcuda.so.1",
            .env_var = "NCCLSHIM_CUDA_LIBRARY",
            .accept = accept_cuda,
        },
    .describe = describe_success,
};

/* Fill zeroed storage from checked options and search. */
static ncclshim_status open_into(ncclshim_cuda *cuda, const ncclshim_cuda_options *opts) {
  cuda->table = ncs_cuda_absent_table;
  return ncs_handle_open(&cuda->core, &cuda_binding, opts->path);
}

ncclshim_status ncclshim_cuda_open(const ncclshim_cuda_options *options, ncclshim_cuda **out) {
  ncclshim_cuda_options opts = NCCLSHIM_CUDA_OPTIONS_INIT;
  ncclshim_status status = ncs_handle_options(
      &opts, sizeof(opts), options, offsetof(ncclshim_cuda_options, path) + sizeof(opts.path), out,
      "ncclshim_cuda_open", "NCCLSHIM_CUDA_OPTIONS_INIT");
  if (status != NCCLSHIM_OK) return status;
  ncclshim_cuda *cuda = calloc(1, sizeof(*cuda));
  if (cuda == NULL) return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_cuda_open: out of memory");
  *out = cuda;
  return open_into(cuda, &opts);
}

void ncclshim_cuda_close(ncclshim_cuda *cuda) {
  if (cuda != NULL && !cuda->core.is_default) ncs_handle_close(&cuda->core);
}

NCCLSHIM_DEFAULT_HANDLE(ncclshim_cuda, ncclshim_cuda_options, NCCLSHIM_CUDA_OPTIONS_INIT, open_into)

ncclshim_cuda *ncclshim_cuda_default(void) { return default_of(); }

/* ---- Accessors: each is safe on NULL (an explicit open that ran out of memory). ---- */

NCCLSHIM_HANDLE_ACCESSORS(ncclshim_cuda, ncclshim_cuda)

const ncclshim_cuda_table *ncclshim_cuda_functions(const ncclshim_cuda *cuda) {
  return cuda ? &cuda->table : &ncs_cuda_absent_table;
}
int ncclshim_cuda_driver_version(const ncclshim_cuda *cuda, int *major, int *minor) {
  int version = cuda ? cuda->driver_version : 0;
  if (major) *major = version / 1000;
  if (minor) *minor = (version % 1000) / 10;
  return version;
}
int ncclshim_cuda_is_stub(const ncclshim_cuda *cuda) {
  return cuda ? __atomic_load_n(&cuda->is_stub, __ATOMIC_RELAXED) : 0;
}
ncclshim_cuda_bootstrap ncclshim_cuda_bootstrap_used(const ncclshim_cuda *cuda) {
  return cuda ? cuda->bootstrap : NCCLSHIM_CUDA_BOOTSTRAP_NONE;
}
const char *ncclshim_cuda_bootstrap_name(ncclshim_cuda_bootstrap bootstrap) {
  static const char *const names[] = {"none", "dlsym", "cuGetProcAddress", "cuGetProcAddress_v2"};
  return (unsigned)bootstrap < sizeof(names) / sizeof(names[0]) ? names[bootstrap] : "unknown";
}
int ncclshim_cuda_has_function(const ncclshim_cuda *cuda, enum ncclshim_cuda_function fn) {
  return ncclshim_cuda_function_abi(cuda, fn) != 0;
}
int ncclshim_cuda_function_abi(const ncclshim_cuda *cuda, enum ncclshim_cuda_function fn) {
  return cuda && (unsigned)fn < NCCLSHIM_CUDA_FUNCTION_COUNT ? cuda->abi[fn] : 0;
}
