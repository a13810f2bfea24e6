/* Opening a CUDA driver: search, stub check and version first, then the table; the default
 * handle; accessors. Nothing here calls cuInit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../loader/dl.h"
#include "../../loader/search.h"
#include "../internal.h"
#include "cuda_handle.h"

enum { TEXT_SIZE = 1536 };

/* The search names the file in front of the reason (and the real file after it, when the
 * name tried was a link or a SONAME). */
static ncclshim_status refuse_stub(ncclshim_cuda *cuda, const char *how, char *reason,
                                   size_t size) {
  cuda->is_stub = 1;
  snprintf(reason, size, "the CUDA toolkit's stub library (%s), not a CUDA driver", how);
  return NCCLSHIM_DRIVER_UNAVAILABLE;
}

/* The search's accept step: is this a usable driver? Reads the version (safe without cuInit,
 * and before fork), then binds the table. */
static ncclshim_status accept_cuda(void *context, void *library, const char *path, char *reason,
                                   size_t size) {
  ncclshim_cuda *cuda = context;
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
  cuda->driver_version = version;
  ncclshim_status status = ncclshim_cuda_bind(cuda, library, reason, size);
  if (status != NCCLSHIM_OK) cuda->driver_version = 0;
  return status;
}

static char *describe_success(const ncclshim_cuda *cuda) {
  char text[TEXT_SIZE], have[16];
  snprintf(text, sizeof(text), "CUDA driver %s from %s (%s%s, entry points via %s)",
           ncclshim_cuda_format_version(cuda->driver_version, have, sizeof(have)), cuda->path,
           ncclshim_found_via_name(cuda->via), cuda->preloaded ? ", already loaded" : "",
           ncclshim_cuda_bootstrap_name(cuda->bootstrap));
  return strdup(text);
}

ncclshim_status ncclshim_cuda_open(const ncclshim_cuda_options *options, ncclshim_cuda **out) {
  if (out == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_cuda_open: out is NULL");
  ncclshim_cuda_options opts = NCCLSHIM_CUDA_OPTIONS_INIT;
  if (options != NULL) {
    if (options->size < offsetof(ncclshim_cuda_options, path) + sizeof(opts.path))
      return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                           "ncclshim_cuda_open: options->size %zu is too small (use "
                           "NCCLSHIM_CUDA_OPTIONS_INIT)",
                           options->size);
    memcpy(&opts, options, sizeof(opts) < options->size ? sizeof(opts) : options->size);
  }
  ncclshim_cuda *cuda = calloc(1, sizeof(*cuda));
  if (cuda == NULL)
    return ncclshim_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_cuda_open: out of memory");
  cuda->table = ncclshim_cuda_absent_table;

  /* No well-known directories: the driver comes with the system (ld.so cache, container
   * runtime), and a directory guess is how stubs get picked up. */
  ncshl_search search = {
      .explicit_path = opts.path,
      .env_var = "NCCLSHIM_CUDA_LIBRARY",
      .soname = "libcuda.so.1",
      .dirs = NULL,
      .accept = accept_cuda,
      .context = cuda,
  };
  char summary[TEXT_SIZE];
  ncshl_found found;
  cuda->status = ncshl_search_run(&search, &cuda->trail, &found, summary, sizeof(summary));

  if (cuda->status == NCCLSHIM_OK) {
    cuda->library = found.handle;
    cuda->path = found.path;
    cuda->via = found.via;
    cuda->preloaded = found.preloaded;
    cuda->is_stub = 0; /* a stub refused earlier in the search is not what was loaded */
    cuda->message = describe_success(cuda);
  } else {
    cuda->table = ncclshim_cuda_absent_table;
    cuda->bootstrap = NCCLSHIM_CUDA_BOOTSTRAP_NONE;
    memset(cuda->abi, 0, sizeof(cuda->abi));
    char text[TEXT_SIZE + 64];
    snprintf(text, sizeof(text), "%s: %s", ncclshim_status_name(cuda->status), summary);
    cuda->message = strdup(text);
    ncclshim_set_error("%s", text);
    ncclshim_cuda_note_open_failure(text);
  }
  if (ncclshim_debug_enabled()) {
    ncshl_trail_print(&cuda->trail, "ncclshim cuda");
    fprintf(stderr, "ncclshim cuda: %s\n", cuda->message ? cuda->message : "(out of memory)");
  }
  *out = cuda;
  return cuda->status;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static ncclshim_cuda *default_handle;

void ncclshim_cuda_close(ncclshim_cuda *cuda) {
  if (cuda == NULL || cuda == default_handle) return;
  ncshl_trail_free(&cuda->trail);
  free(cuda->message);
  free(cuda->path);
  free(cuda);
}

static void open_default(void) { ncclshim_cuda_open(NULL, &default_handle); }

ncclshim_cuda *ncclshim_cuda_default(void) {
  pthread_once(&default_once, open_default);
  return default_handle;
}

/* ---- Accessors: each is safe on NULL (out of memory at first use). ---- */

ncclshim_status ncclshim_cuda_status(const ncclshim_cuda *cuda) {
  return cuda ? cuda->status : NCCLSHIM_OUT_OF_MEMORY;
}
const char *ncclshim_cuda_message(const ncclshim_cuda *cuda) {
  return cuda && cuda->message ? cuda->message : "out of memory";
}
const ncclshim_cuda_table *ncclshim_cuda_functions(const ncclshim_cuda *cuda) {
  return cuda ? &cuda->table : &ncclshim_cuda_absent_table;
}
const char *ncclshim_cuda_path(const ncclshim_cuda *cuda) { return cuda ? cuda->path : NULL; }
ncclshim_found_via ncclshim_cuda_found_via(const ncclshim_cuda *cuda) {
  return cuda ? cuda->via : NCCLSHIM_VIA_NONE;
}
int ncclshim_cuda_preloaded(const ncclshim_cuda *cuda) { return cuda ? cuda->preloaded : 0; }
int ncclshim_cuda_driver_version(const ncclshim_cuda *cuda, int *major, int *minor) {
  int version = cuda ? cuda->driver_version : 0;
  if (major) *major = version / 1000;
  if (minor) *minor = (version % 1000) / 10;
  return version;
}
const char *ncclshim_cuda_format_version(int version, char *buf, size_t size) {
  if (size == 0) return buf;
  if (version <= 0)
    snprintf(buf, size, "none");
  else
    snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
  return buf;
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
size_t ncclshim_cuda_attempt_count(const ncclshim_cuda *cuda) {
  return cuda ? cuda->trail.count : 0;
}
const ncclshim_attempt *ncclshim_cuda_attempt(const ncclshim_cuda *cuda, size_t index) {
  return cuda && index < cuda->trail.count ? &cuda->trail.items[index] : NULL;
}
