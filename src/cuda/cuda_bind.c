/* Binding the table of an opened driver: through cuGetProcAddress_v2, else the 11.3
 * cuGetProcAddress, else (drivers < 11.3) dlsym of the exported names. Each function is asked
 * for at exactly its list version, and a driver older than that is not asked at all. */
#include <stdio.h>
#include <string.h>

#include "loader/dl.h"
#include "cuda_handle.h"

typedef ncclshim_cu_result (*proc_address_v2_fn)(const char *symbol, void **pfn, int cudaVersion,
                                                 uint64_t flags, int *symbolStatus);
typedef ncclshim_cu_result (*proc_address_fn)(const char *symbol, void **pfn, int cudaVersion,
                                              uint64_t flags);

typedef struct resolver {
  void *library;
  ncclshim_cuda_bootstrap mode;
  proc_address_v2_fn proc_address_v2;
  proc_address_fn proc_address;
} resolver;

static resolver bootstrap(void *library) {
  resolver r = {.library = library, .mode = NCCLSHIM_CUDA_BOOTSTRAP_DLSYM};
  ncshl_fn fn = ncshl_symbol(library, "cuGetProcAddress_v2");
  if (fn != NULL) {
    r.mode = NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2;
    r.proc_address_v2 = (proc_address_v2_fn)fn;
  } else if ((fn = ncshl_symbol(library, "cuGetProcAddress")) != NULL) {
    /* The string "cuGetProcAddress" names the 4-argument 11.3 ABI (cuda.h's macro renames
     * only the token). */
    r.mode = NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS;
    r.proc_address = (proc_address_fn)fn;
  }
  return r;
}

/* `name` at ABI `ask` (exported as name + suffix), or NULL with the reason in `why`. */
static ncshl_fn resolve(const resolver *r, const char *name, int ask, const char *suffix, char *why,
                        size_t size) {
  if (r->mode == NCCLSHIM_CUDA_BOOTSTRAP_DLSYM) {
    char exported[96];
    snprintf(exported, sizeof(exported), "%s%s", name, suffix);
    ncshl_fn fn = ncshl_symbol(r->library, exported);
    if (fn == NULL) snprintf(why, size, "the driver does not export %s", exported);
    return fn;
  }
  void *pfn = NULL;
  int symbol_status = NCCLSHIM_CU_GET_PROC_ADDRESS_SUCCESS;
  ncclshim_cu_result rc =
      r->mode == NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2
          ? r->proc_address_v2(name, &pfn, ask, NCCLSHIM_CU_GET_PROC_ADDRESS_DEFAULT,
                               &symbol_status)
          : r->proc_address(name, &pfn, ask, NCCLSHIM_CU_GET_PROC_ADDRESS_DEFAULT);
  if (rc != NCCLSHIM_CUDA_SUCCESS) {
    snprintf(why, size, "cuGetProcAddress answered %s (%d)", ncclshim_cuda_result_name(NULL, rc),
             rc);
  } else if (symbol_status == NCCLSHIM_CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
    snprintf(why, size, "the driver does not have it");
  } else if (symbol_status == NCCLSHIM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
    snprintf(why, size, "the driver has no ABI of it as old as %d", ask);
  } else if (symbol_status != NCCLSHIM_CU_GET_PROC_ADDRESS_SUCCESS || pfn == NULL) {
    snprintf(why, size, "cuGetProcAddress gave no address (symbol status %d)", symbol_status);
  } else {
    ncshl_fn fn;
    memcpy(&fn, &pfn, sizeof(fn)); /* object pointer to function pointer, without a cast */
    return fn;
  }
  return NULL;
}

ncclshim_status ncs_cuda_bind(ncclshim_cuda *cuda, void *library, int driver_version, char *reason,
                              size_t size) {
  resolver r = bootstrap(library);
  ncshl_fn found[NCCLSHIM_CUDA_FUNCTION_COUNT];
  int abi[NCCLSHIM_CUDA_FUNCTION_COUNT];
  int too_old = 0, missing = 0;
  char have[16], need[16];
  ncclshim_cuda_format_version(driver_version, have, sizeof(have));
  int used = snprintf(reason, size, "CUDA driver %s lacks required functions:", have);

  for (int i = 0; i < NCCLSHIM_CUDA_FUNCTION_COUNT; i++) {
    int ask = ncclshim_cuda_function_version(i);
    const char *suffix = ncs_cuda_export_suffix(i);
    const char *older_suffix;
    int older = ncs_cuda_older_abi(i, &older_suffix);
    if (older != 0 && driver_version < ask) {
      ask = older;
      suffix = older_suffix;
    }
    char why[160];
    found[i] = NULL;
    if (driver_version < ask) {
      snprintf(why, sizeof(why), "needs a CUDA driver >= %s",
               ncclshim_cuda_format_version(ask, need, sizeof(need)));
    } else {
      found[i] = resolve(&r, ncclshim_cuda_function_name(i), ask, suffix, why, sizeof(why));
    }
    abi[i] = found[i] != NULL ? ask : 0;
    if (found[i] == NULL && ncclshim_cuda_function_required(i)) {
      if (driver_version < ask)
        too_old = 1;
      else
        missing = 1;
      if (used > 0 && (size_t)used < size)
        used += snprintf(reason + used, size - (size_t)used, " %s (%s)",
                         ncclshim_cuda_function_name(i), why);
    }
  }
  if (missing) return NCCLSHIM_MISSING_SYMBOLS;
  if (too_old) return NCCLSHIM_VERSION_TOO_OLD;

#define BIND_(name, ask, policy, kind, n, params) \
  cuda->table.name = (ncclshim_cuda_pfn_##name)found[NCCLSHIM_CUDA_FN_##name];
  NCCLSHIM_CUDA_FUNCTIONS(BIND_)
#undef BIND_
  memcpy(cuda->abi, abi, sizeof(abi));
  cuda->driver_version = driver_version;
  cuda->bootstrap = r.mode;
  ncs_cuda_fill_missing(cuda);
  reason[0] = '\0';
  return NCCLSHIM_OK;
}
