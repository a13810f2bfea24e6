/* The "unavailable" entries of the CUDA tables, generated from the function list: one set for
 * "no driver is loaded" (CUDA_ERROR_NOT_INITIALIZED) and one for "the loaded driver lacks
 * this function" (CUDA_ERROR_NOT_SUPPORTED). Each leaves a message for ncclshim_last_error.
 * cuGetErrorName/String never fail that way: they answer from ncclshim's own table. */
#include <stdio.h>

#include "src/internal.h"
#include "cuda_handle.h"

/* For each function, the version of the latest driver bound without it (atomic). */
static int lacking_driver[NCCLSHIM_CUDA_FUNCTION_COUNT];

/* No driver behind this table: say why, from the newest handle that failed to load. */
static ncclshim_cu_result absent(enum ncclshim_cuda_function fn) {
  char why[1536];
  ncs_registry_absent(NCCLSHIM_BINDING_CUDA, "CUDA driver", why, sizeof(why));
  ncs_set_error("%s: %s", ncclshim_cuda_function_name(fn), why);
  return NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED;
}

static ncclshim_cu_result missing(enum ncclshim_cuda_function fn) {
  const char *older_suffix;
  int need = ncs_cuda_older_abi(fn, &older_suffix);
  if (need == 0) need = ncclshim_cuda_function_version(fn);
  int have = __atomic_load_n(&lacking_driver[fn], __ATOMIC_RELAXED);
  char need_text[16], have_text[16];
  ncclshim_cuda_format_version(need, need_text, sizeof(need_text));
  ncclshim_cuda_format_version(have, have_text, sizeof(have_text));
  if (have < need)
    ncs_set_error("%s needs a CUDA driver >= %s; the loaded driver is %s",
                  ncclshim_cuda_function_name(fn), need_text, have_text);
  else
    ncs_set_error("%s: the loaded CUDA driver (%s) does not provide it",
                  ncclshim_cuda_function_name(fn), have_text);
  return NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUBS_(name, ask, policy, kind, n, params)                         \
  static ncclshim_cu_result absent_##name NCCLSHIM_PP_PARAMS(n, params) {  \
    return absent(NCCLSHIM_CUDA_FN_##name);                                \
  }                                                                        \
  static ncclshim_cu_result missing_##name NCCLSHIM_PP_PARAMS(n, params) { \
    return missing(NCCLSHIM_CUDA_FN_##name);                               \
  }
NCCLSHIM_CUDA_FUNCTIONS(STUBS_)
#pragma GCC diagnostic pop

/* Like the driver: an unknown code gives CUDA_ERROR_INVALID_VALUE and *text = NULL. */
static ncclshim_cu_result builtin_text(const char *text, const char **out) {
  if (out == NULL) return NCCLSHIM_CUDA_ERROR_INVALID_VALUE;
  *out = text;
  return text ? NCCLSHIM_CUDA_SUCCESS : NCCLSHIM_CUDA_ERROR_INVALID_VALUE;
}
static ncclshim_cu_result builtin_error_name(ncclshim_cu_result error, const char **name) {
  return builtin_text(ncs_cuda_builtin_name(error), name);
}
static ncclshim_cu_result builtin_error_string(ncclshim_cu_result error, const char **text) {
  return builtin_text(ncs_cuda_builtin_string(error), text);
}

#define ABSENT_ENTRY_(name, ask, policy, kind, n, params) .name = absent_##name,
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init" /* the two entries replaced below */
const ncclshim_cuda_table ncs_cuda_absent_table = {
    NCCLSHIM_CUDA_FUNCTIONS(ABSENT_ENTRY_).cuGetErrorName = builtin_error_name,
    .cuGetErrorString = builtin_error_string,
};
#pragma GCC diagnostic pop

#define FILL_MISSING_(name, ask, policy, kind, n, params)                            \
  if (cuda->abi[NCCLSHIM_CUDA_FN_##name] == 0) {                                     \
    cuda->table.name = missing_##name;                                               \
    __atomic_store_n(&lacking_driver[NCCLSHIM_CUDA_FN_##name], cuda->driver_version, \
                     __ATOMIC_RELAXED);                                              \
  }
void ncs_cuda_fill_missing(ncclshim_cuda *cuda) {
  NCCLSHIM_CUDA_FUNCTIONS(FILL_MISSING_)
  if (cuda->abi[NCCLSHIM_CUDA_FN_cuGetErrorName] == 0)
    cuda->table.cuGetErrorName = builtin_error_name;
  if (cuda->abi[NCCLSHIM_CUDA_FN_cuGetErrorString] == 0)
    cuda->table.cuGetErrorString = builtin_error_string;
}
