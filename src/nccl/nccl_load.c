/* The NCCL binding's part in the handle lifecycle: version first, then the table; the
 * default handle; the accessors of its own fields. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "loader/dl.h"
#include "src/internal.h"
#include "nccl_handle.h"
#include "nccl_names.h"

/* A name whose lookup would read outside an object's tables (ncshl_define): the library is
 * refused, naming the corrupt file (`*corrupt`, freed here). */
static ncclshim_status corrupt_tables(const char *name, char **corrupt, char *reason, size_t size) {
  snprintf(reason, size,
           "corrupt symbol tables in %s: looking %s up would read outside the file's "
           "mapping (not looked up)",
           *corrupt ? *corrupt : "a mapped object", name);
  free(*corrupt);
  *corrupt = NULL;
  return NCCLSHIM_LOAD_FAILED;
}

/* ncclGetVersion through the library's handle, checked to be a function before it is called:
 * a variable of that name would be jumped into. OK with its address, or NOT_NCCL. *definer
 * gets the file that really defines it when that is not the file opened. */
static ncclshim_status find_get_version(void *library, void **address, char **definer, char *reason,
                                        size_t size) {
  switch (ncshl_define(library, "ncclGetVersion", address, definer)) {
  case NCSHL_DEFINED_FUNCTION:
    return NCCLSHIM_OK;
  case NCSHL_DEFINED_NOWHERE:
    snprintf(reason, size, "no ncclGetVersion: not an NCCL library");
    break;
  case NCSHL_DEFINED_DATA:
    snprintf(reason, size,
             "ncclGetVersion is a variable, not a function: not an NCCL library "
             "(never called)");
    break;
  case NCSHL_DEFINED_UNPLACED:
    snprintf(reason, size,
             "ncclGetVersion lies in no mapped object (a thread-local variable), "
             "not a function: not an NCCL library (never called)");
    break;
  case NCSHL_DEFINED_CORRUPT:
    return corrupt_tables("ncclGetVersion", definer, reason, size);
  }
  return NCCLSHIM_NOT_NCCL;
}

/* Read and check the version before anything else is resolved. */
static ncclshim_status check_version(int min_version, void *symbol, int *packed_out, int *code_out,
                                     char *reason, size_t size) {
  int code = INT_MIN; /* a library that "succeeds" without writing is caught below */
  ncclshim_pfn_ncclGetVersion get_version;
  memcpy(&get_version, &symbol, sizeof(get_version)); /* object pointer to function pointer */
  int result = get_version(&code);
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
  if (packed < min_version) {
    /* A minimum beyond any 2.x (INT_MAX, say) is named as the number it is. */
    if (min_version >= 30000)
      snprintf(reason, size, "NCCL %s is older than min_version %d, which no NCCL 2.x meets", have,
               min_version);
    else
      snprintf(reason, size, "NCCL %s is older than the %s asked for", have,
               ncclshim_format_version(min_version, need, sizeof(need)));
    return NCCLSHIM_VERSION_TOO_OLD;
  }
  *packed_out = packed;
  *code_out = code;
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
    /* Only a function is bound: an entry of the table that jumped into data would crash. */
    void *address = NULL;
    char *corrupt = NULL;
    found[i] = NULL;
    ncshl_definition kind =
        ncshl_define(library, ncclshim_nccl_function_name(i), &address, &corrupt);
    if (kind == NCSHL_DEFINED_CORRUPT)
      return corrupt_tables(ncclshim_nccl_function_name(i), &corrupt, reason, size);
    free(corrupt); /* the file defining it: only ncclGetVersion's is kept */
    if (kind == NCSHL_DEFINED_FUNCTION) memcpy(&found[i], &address, sizeof(address));
    if (found[i] == NULL && ncclshim_nccl_function_required(i)) {
      missing_required++;
      if (used > 0 && (size_t)used < size)
        used += snprintf(reason + used, size - (size_t)used, " %s", ncclshim_nccl_function_name(i));
    }
  }
  if (missing_required) return NCCLSHIM_MISSING_SYMBOLS;
  for (int i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++) nccl->present[i] = found[i] != NULL;
#define BIND_(name, version, policy, role, returns, n, params) \
  nccl->table.name = (ncclshim_pfn_##name)found[NCCLSHIM_FN_##name];
  NCCLSHIM_NCCL_FUNCTIONS(BIND_)
#undef BIND_
  ncs_fill_missing(nccl);
  reason[0] = '\0';
  return NCCLSHIM_OK;
}

/* "2.28.9 at /path (chosen), 2.28.3 at /other" into text; returns text. */
static const char *census_text(const ncclshim_nccl_entry *entries, size_t count, char *text,
                               size_t size) {
  int used = 0;
  text[0] = '\0';
  for (size_t i = 0; i < count && used >= 0 && (size_t)used < size; i++) {
    char version[16];
    used += snprintf(text + used, size - (size_t)used, "%s%s at %s%s%s", i ? ", " : "",
                     ncclshim_format_version(entries[i].version, version, sizeof(version)),
                     entries[i].path, entries[i].in_program ? " (linked into the program)" : "",
                     entries[i].chosen ? " (chosen)" : "");
  }
  return text;
}

/* An override naming another file than an NCCL already mapped: refused when asked, so that
 * a second NCCL is never mapped; otherwise the census after loading warns. */
static int check_second_copy(void *context, const char *path, char *reason, size_t size) {
  ncclshim_nccl *nccl = context;
  if (!nccl->refuse_second_copy) return NCCLSHIM_OK;
  ncclshim_nccl_entry *mapped;
  size_t count;
  if (ncs_nccl_take_census(NULL, 0, &mapped, &count) != 0) return NCCLSHIM_OUT_OF_MEMORY;
  int same = count == 0;
  for (size_t i = 0; i < count && !same; i++) same = ncshl_same_file(mapped[i].path, path);
  if (!same) {
    char text[1024];
    snprintf(reason, size,
             "another NCCL is mapped in this process (%s): a second one is refused "
             "(refuse_second_copy or NCCLSHIM_REFUSE_SECOND_NCCL)",
             census_text(mapped, count, text, sizeof(text)));
  }
  ncs_nccl_entries_free(mapped, count);
  return same ? NCCLSHIM_OK : NCCLSHIM_SECOND_COPY;
}

/* The search's accept step (the handle is its context): the drop-in is never NCCL; then
 * ncclGetVersion, the version, the table. A library that only links NCCL is accepted with the
 * file that defines NCCL's functions. */
static ncshl_decision accept_nccl(void *context, void *library, const char *path, char *reason,
                                  size_t size) {
  ncclshim_nccl *nccl = context;
  if (ncshl_object(library, NCCLSHIM_DROPIN_MARKER_NAME) != NULL) {
    snprintf(reason, size, "this is ncclshim's drop-in library, not NCCL: skipped");
    return (ncshl_decision){NCCLSHIM_NOT_NCCL, NULL};
  }
  void *get_version = NULL;
  char *definer = NULL;
  int packed = 0, code = 0;
  ncclshim_status status = find_get_version(library, &get_version, &definer, reason, size);
  if (status == NCCLSHIM_OK)
    status = check_version(nccl->min_version, get_version, &packed, &code, reason, size);
  if (status == NCCLSHIM_OK) status = bind_functions(nccl, library, reason, size);
  if (status != NCCLSHIM_OK) {
    free(definer);
    return (ncshl_decision){status, NULL};
  }
  if (ncs_nccl_take_census(get_version, packed, &nccl->census, &nccl->census_count) != 0) {
    free(definer);
    snprintf(reason, size, "out of memory");
    return (ncshl_decision){NCCLSHIM_OUT_OF_MEMORY, NULL};
  }
  nccl->version = packed;
  nccl->version_code = code;
  nccl->capabilities = ncs_compute_capabilities(nccl);
  nccl->get_version = get_version;
  if (definer != NULL)
    snprintf(reason, size, "%s only links NCCL: its functions are defined in %s", path, definer);
  return (ncshl_decision){NCCLSHIM_OK, definer};
}

static void describe_success(const ncs_handle *core, char *text, size_t size) {
  const ncclshim_nccl *nccl = (const ncclshim_nccl *)core;
  char have[16];
  int used =
      snprintf(text, size, "NCCL %s from %s (%s%s%s%s)",
               ncclshim_format_version(nccl->version, have, sizeof(have)), core->path,
               ncclshim_found_via_name(core->via),
               core->preloaded && core->via != NCCLSHIM_VIA_PRELOADED ? ", already loaded" : "",
               core->opened ? ", through " : "", core->opened ? core->opened : "");
  if (nccl->census_count > 1 && used > 0 && (size_t)used < size) {
    char copies[1024];
    snprintf(text + used, size - (size_t)used,
             "; WARNING: %zu NCCLs are mapped in this process (%s): a communicator of one is "
             "garbage to another",
             nccl->census_count,
             census_text(nccl->census, nccl->census_count, copies, sizeof(copies)));
  }
}

/* The NCCL search, in its order (docs/loader.md): an override alone, else a copy already
 * mapped, what the user set (LD_LIBRARY_PATH), the active environment, the ld.so cache, the
 * system loader, the well-known places. */
static const ncshl_step_spec nccl_steps[] = {
    {NCSHL_STEP_EXPLICIT, NULL},
    {NCSHL_STEP_ENVIRONMENT, NULL},
    {NCSHL_STEP_PRELOADED, NULL},
    {NCSHL_STEP_LIBRARY_PATH, NULL},
    {NCSHL_STEP_ACTIVE_ENV, ncs_nccl_environment_places},
    {NCSHL_STEP_LD_CACHE, NULL},
    {NCSHL_STEP_SYSTEM, NULL},
    {NCSHL_STEP_WELL_KNOWN, ncs_nccl_places},
};

const ncs_binding ncs_nccl_binding = {
    .kind = NCCLSHIM_BINDING_NCCL,
    .who = "ncclshim",
    .search =
        {
            .steps = nccl_steps,
            .step_count = sizeof(nccl_steps) / sizeof(nccl_steps[0]),
            .soname = NCCLSHIM_NCCL_SONAME,
            .env_var = "NCCLSHIM_NCCL_LIBRARY",
            .identity_symbol = "ncclGetVersion",
            .impostor_symbol = NCCLSHIM_DROPIN_MARKER_NAME,
            .before_override = check_second_copy,
            .accept = accept_nccl,
        },
    .describe = describe_success,
};

/* Fill zeroed storage from checked options and search. */
static ncclshim_status open_into(ncclshim_nccl *nccl, const ncclshim_nccl_options *opts) {
  nccl->table = ncs_absent_table;
  nccl->min_version = opts->min_version;
  nccl->refuse_second_copy =
      opts->refuse_second_copy ? 1 : ncs_env_flag("NCCLSHIM_REFUSE_SECOND_NCCL");
  pthread_mutex_init(&nccl->lazy_lock, NULL);
  return ncs_handle_open(&nccl->core, &ncs_nccl_binding, opts->path);
}

ncclshim_status ncclshim_nccl_open(const ncclshim_nccl_options *options, ncclshim_nccl **out) {
  ncclshim_nccl_options opts = NCCLSHIM_NCCL_OPTIONS_INIT;
  ncclshim_status status = ncs_handle_options(
      &opts, sizeof(opts), options, offsetof(ncclshim_nccl_options, min_version) + sizeof(int), out,
      "ncclshim_nccl_open", "NCCLSHIM_NCCL_OPTIONS_INIT");
  if (status != NCCLSHIM_OK) return status;
  if (opts.min_version < 0)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_open: min_version %d is negative",
                    opts.min_version);
  ncclshim_nccl *nccl = calloc(1, sizeof(*nccl));
  if (nccl == NULL) return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_open: out of memory");
  *out = nccl;
  return open_into(nccl, &opts);
}

void ncclshim_nccl_close(ncclshim_nccl *nccl) {
  if (nccl == NULL || nccl->core.is_default) return;
  free(nccl->build);
  ncs_nccl_entries_free(nccl->census, nccl->census_count);
  pthread_mutex_destroy(&nccl->lazy_lock);
  ncs_handle_close(&nccl->core);
}

NCCLSHIM_DEFAULT_HANDLE(ncclshim_nccl, ncclshim_nccl_options, NCCLSHIM_NCCL_OPTIONS_INIT, open_into)

ncclshim_nccl *ncclshim_nccl_default(void) { return default_of(); }
ncclshim_status ncclshim_init(void) { return ncclshim_nccl_status(default_of()); }
int ncclshim_version(void) { return ncclshim_nccl_version(default_of()); }
const ncclshim_nccl_table *ncclshim_table(void) { return ncclshim_nccl_functions(default_of()); }

/* ---- Accessors: each is safe on NULL (an explicit open that ran out of memory). ---- */

NCCLSHIM_HANDLE_ACCESSORS(ncclshim_nccl, ncclshim_nccl)

const ncclshim_nccl_table *ncclshim_nccl_functions(const ncclshim_nccl *nccl) {
  return nccl ? &nccl->table : &ncs_absent_table;
}
int ncclshim_nccl_version(const ncclshim_nccl *nccl) { return nccl ? nccl->version : 0; }
int ncclshim_nccl_version_code(const ncclshim_nccl *nccl) { return nccl ? nccl->version_code : 0; }
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
  return nccl && nccl->core.status == NCCLSHIM_OK && (unsigned)fn < NCCLSHIM_NCCL_FUNCTION_COUNT &&
         !nccl->present[fn] && ncclshim_nccl_function_version(fn) <= nccl->version;
}
size_t ncclshim_nccl_census_count(const ncclshim_nccl *nccl) {
  return nccl ? nccl->census_count : 0;
}
const ncclshim_nccl_entry *ncclshim_nccl_census_entry(const ncclshim_nccl *nccl, size_t index) {
  return nccl && index < nccl->census_count ? &nccl->census[index] : NULL;
}
