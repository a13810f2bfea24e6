/* Opening an NCCL: search, version first, then the table; the default handle; accessors. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/dl.h"
#include "../loader/search.h"
#include "internal.h"
#include "nccl_handle.h"

enum { TEXT_SIZE = 1536 };

/* The drop-in library exports this; a search that reaches it must not take it for NCCL. */
#define DROPIN_MARKER "ncclshim_dropin_identity"

/* Read and check the version before anything else is resolved. */
static ncclshim_status check_version(ncclshim_nccl *nccl, void *library, char *reason,
                                     size_t size) {
  ncshl_fn symbol = ncshl_symbol(library, "ncclGetVersion");
  if (symbol == NULL) {
    snprintf(reason, size, "no ncclGetVersion: not an NCCL library");
    return NCCLSHIM_NOT_NCCL;
  }
  int code = INT_MIN; /* a library that "succeeds" without writing is caught below */
  int result = ((ncclshim_pfn_ncclGetVersion)symbol)(&code);
  if (result != ncclSuccess) {
    snprintf(reason, size, "ncclGetVersion failed: result %d (%s)", result,
             ncclshim_nccl_result_string(result));
    return NCCLSHIM_BAD_VERSION;
  }
  if (code == INT_MIN) {
    snprintf(reason, size, "ncclGetVersion succeeded but wrote no version");
    return NCCLSHIM_BAD_VERSION;
  }
  int major = 0;
  int packed = ncclshim_decode_version(code, &major, NULL, NULL);
  char have[16], need[16];
  if (packed == 0) {
    snprintf(reason, size, "ncclGetVersion answered %d, which is no NCCL version", code);
    return NCCLSHIM_BAD_VERSION;
  }
  ncclshim_format_version(packed, have, sizeof(have));
  if (major != 2) {
    snprintf(reason, size, "NCCL %s has major version %d; ncclshim supports major version 2", have,
             major);
    return NCCLSHIM_WRONG_MAJOR;
  }
  if (packed < nccl->min_version) {
    snprintf(reason, size, "NCCL %s is older than the %s asked for", have,
             ncclshim_format_version(nccl->min_version, need, sizeof(need)));
    return NCCLSHIM_VERSION_TOO_OLD;
  }
  nccl->version = packed;
  nccl->version_code = code;
  return NCCLSHIM_OK;
}

/* Resolve every function through this library's handle. Refuses the library when required
 * functions are missing; the table is only written once the library is accepted. */
static ncclshim_status bind_functions(ncclshim_nccl *nccl, void *library, char *reason,
                                      size_t size) {
  ncshl_fn found[NCCLSHIM_NCCL_FUNCTION_COUNT];
  int used = snprintf(reason, size, "lacks required functions:");
  int missing_required = 0;
  for (int i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++) {
    found[i] = ncshl_symbol(library, ncclshim_nccl_function_name(i));
    nccl->present[i] = found[i] != NULL;
    if (found[i] == NULL && ncclshim_nccl_function_required(i)) {
      missing_required++;
      if (used > 0 && (size_t)used < size)
        used += snprintf(reason + used, size - (size_t)used, " %s", ncclshim_nccl_function_name(i));
    }
  }
  if (missing_required) return NCCLSHIM_MISSING_SYMBOLS;
#define BIND_(name, version, policy, returns, n, params) \
  nccl->table.name = (ncclshim_pfn_##name)found[NCCLSHIM_FN_##name];
  NCCLSHIM_NCCL_FUNCTIONS(BIND_)
#undef BIND_
  ncclshim_fill_missing(nccl);
  reason[0] = '\0';
  return NCCLSHIM_OK;
}

static ncclshim_status accept_nccl(void *context, void *library, const char *path, char *reason,
                                   size_t size) {
  ncclshim_nccl *nccl = context;
  (void)path;
  if (ncshl_object(library, DROPIN_MARKER) != NULL) {
    snprintf(reason, size, "this is ncclshim's drop-in library, not NCCL: skipped");
    return NCCLSHIM_NOT_NCCL;
  }
  ncclshim_status status = check_version(nccl, library, reason, size);
  if (status == NCCLSHIM_OK) status = bind_functions(nccl, library, reason, size);
  if (status != NCCLSHIM_OK) nccl->version = nccl->version_code = 0;
  return status;
}

static char *describe_success(const ncclshim_nccl *nccl) {
  char text[TEXT_SIZE], have[16];
  snprintf(text, sizeof(text), "NCCL %s from %s (%s%s)",
           ncclshim_format_version(nccl->version, have, sizeof(have)), nccl->path,
           ncclshim_found_via_name(nccl->via), nccl->preloaded ? ", already loaded" : "");
  return strdup(text);
}

static ncclshim_nccl *new_handle(int min_version) {
  ncclshim_nccl *nccl = calloc(1, sizeof(*nccl));
  if (nccl == NULL) return NULL;
  nccl->table = ncclshim_absent_table;
  nccl->min_version = min_version;
  pthread_mutex_init(&nccl->lazy_lock, NULL);
  return nccl;
}

ncclshim_status ncclshim_nccl_open(const ncclshim_nccl_options *options, ncclshim_nccl **out) {
  if (out == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_open: out is NULL");
  ncclshim_nccl_options opts = NCCLSHIM_NCCL_OPTIONS_INIT;
  if (options != NULL) {
    if (options->size < offsetof(ncclshim_nccl_options, min_version) + sizeof(int))
      return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                           "ncclshim_nccl_open: options->size %zu is too small (use "
                           "NCCLSHIM_NCCL_OPTIONS_INIT)",
                           options->size);
    memcpy(&opts, options, sizeof(opts) < options->size ? sizeof(opts) : options->size);
  }
  if (opts.min_version < 0)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                         "ncclshim_nccl_open: min_version %d is negative", opts.min_version);
  ncclshim_nccl *nccl = new_handle(opts.min_version);
  if (nccl == NULL)
    return ncclshim_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_open: out of memory");

  ncshl_search search = {
      .explicit_path = opts.path,
      .env_var = "NCCLSHIM_NCCL_LIBRARY",
      .soname = "libnccl.so.2",
      .dirs = ncclshim_nccl_places,
      .accept = accept_nccl,
      .context = nccl,
  };
  char summary[TEXT_SIZE];
  ncshl_found found;
  nccl->status = ncshl_search_run(&search, &nccl->trail, &found, summary, sizeof(summary));

  if (nccl->status == NCCLSHIM_OK) {
    nccl->library = found.handle;
    nccl->path = found.path;
    nccl->via = found.via;
    nccl->preloaded = found.preloaded;
    nccl->capabilities = ncclshim_compute_capabilities(nccl);
    nccl->message = describe_success(nccl);
  } else {
    /* The table was never written; only a refused candidate's findings remain to clear. */
    memset(nccl->present, 0, sizeof(nccl->present));
    char text[TEXT_SIZE + 64];
    snprintf(text, sizeof(text), "%s: %s", ncclshim_status_name(nccl->status), summary);
    nccl->message = strdup(text);
    ncclshim_set_error("%s", text);
  }
  if (ncclshim_debug_enabled()) {
    ncshl_trail_print(&nccl->trail, "ncclshim");
    fprintf(stderr, "ncclshim: %s\n", nccl->message ? nccl->message : "(out of memory)");
  }
  ncclshim_registry_add(nccl);
  *out = nccl;
  return nccl->status;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static ncclshim_nccl *default_handle;

void ncclshim_nccl_close(ncclshim_nccl *nccl) {
  if (nccl == NULL || nccl == default_handle) return;
  ncclshim_registry_remove(nccl);
  ncshl_trail_free(&nccl->trail);
  free(nccl->message);
  free(nccl->path);
  free(nccl->build);
  pthread_mutex_destroy(&nccl->lazy_lock);
  free(nccl);
}

static void open_default(void) { ncclshim_nccl_open(NULL, &default_handle); }

ncclshim_nccl *ncclshim_nccl_default(void) {
  pthread_once(&default_once, open_default);
  return default_handle;
}

ncclshim_status ncclshim_init(void) { return ncclshim_nccl_status(ncclshim_nccl_default()); }
int ncclshim_version(void) { return ncclshim_nccl_version(ncclshim_nccl_default()); }
const ncclshim_nccl_table *ncclshim_table(void) {
  return ncclshim_nccl_functions(ncclshim_nccl_default());
}

/* ---- Accessors: each is safe on NULL (out of memory at first use). ---- */

ncclshim_status ncclshim_nccl_status(const ncclshim_nccl *nccl) {
  return nccl ? nccl->status : NCCLSHIM_OUT_OF_MEMORY;
}
const char *ncclshim_nccl_message(const ncclshim_nccl *nccl) {
  return nccl && nccl->message ? nccl->message : "out of memory";
}
const ncclshim_nccl_table *ncclshim_nccl_functions(const ncclshim_nccl *nccl) {
  return nccl ? &nccl->table : &ncclshim_absent_table;
}
int ncclshim_nccl_version(const ncclshim_nccl *nccl) { return nccl ? nccl->version : 0; }
int ncclshim_nccl_version_code(const ncclshim_nccl *nccl) { return nccl ? nccl->version_code : 0; }
const char *ncclshim_nccl_path(const ncclshim_nccl *nccl) { return nccl ? nccl->path : NULL; }
ncclshim_found_via ncclshim_nccl_found_via(const ncclshim_nccl *nccl) {
  return nccl ? nccl->via : NCCLSHIM_VIA_NONE;
}
int ncclshim_nccl_preloaded(const ncclshim_nccl *nccl) { return nccl ? nccl->preloaded : 0; }
uint64_t ncclshim_nccl_capabilities(const ncclshim_nccl *nccl) {
  return nccl ? nccl->capabilities : 0;
}
int ncclshim_nccl_has(const ncclshim_nccl *nccl, ncclshim_capability cap) {
  return (unsigned)cap < NCCLSHIM_CAPABILITY_COUNT &&
         (ncclshim_nccl_capabilities(nccl) & NCCLSHIM_CAP_BIT(cap)) != 0;
}
int ncclshim_nccl_has_function(const ncclshim_nccl *nccl, enum ncclshim_nccl_function fn) {
  return nccl && (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT && nccl->present[fn];
}
int ncclshim_nccl_unexpectedly_missing(const ncclshim_nccl *nccl, enum ncclshim_nccl_function fn) {
  return nccl && nccl->status == NCCLSHIM_OK && (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT &&
         !nccl->present[fn] && ncclshim_nccl_function_version(fn) <= nccl->version;
}
size_t ncclshim_nccl_attempt_count(const ncclshim_nccl *nccl) {
  return nccl ? nccl->trail.count : 0;
}
const ncclshim_attempt *ncclshim_nccl_attempt(const ncclshim_nccl *nccl, size_t index) {
  return nccl && index < nccl->trail.count ? &nccl->trail.items[index] : NULL;
}
