/* The "unavailable" entries of the tables, generated from the function list: one set for
 * "no NCCL is loaded" and one for "the loaded NCCL lacks this function". Each leaves a
 * message for ncclshim_last_error that names the function and why. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "nccl_handle.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclshim_nccl *registry; /* newest first */

void ncclshim_registry_add(ncclshim_nccl *nccl) {
  pthread_mutex_lock(&registry_lock);
  nccl->next_open = registry;
  registry = nccl;
  pthread_mutex_unlock(&registry_lock);
}

void ncclshim_registry_remove(ncclshim_nccl *nccl) {
  pthread_mutex_lock(&registry_lock);
  for (ncclshim_nccl **p = &registry; *p != NULL; p = &(*p)->next_open) {
    if (*p == nccl) {
      *p = nccl->next_open;
      break;
    }
  }
  pthread_mutex_unlock(&registry_lock);
}

/* No NCCL behind this table: say why, from the newest handle that failed to load. */
static void note_absent(enum ncclshim_nccl_function fn) {
  const char *name = ncclshim_nccl_function_name(fn);
  pthread_mutex_lock(&registry_lock);
  const ncclshim_nccl *failed = registry;
  while (failed != NULL && failed->status == NCCLSHIM_OK) failed = failed->next_open;
  if (failed != NULL)
    ncclshim_set_error("%s: no NCCL is loaded (%s)", name, failed->message);
  else
    ncclshim_set_error("%s: no NCCL is loaded", name);
  pthread_mutex_unlock(&registry_lock);
}

/* The loaded NCCL lacks the function: name the version it needs and every loaded library
 * that lacks it (usually one). */
static void note_missing(enum ncclshim_nccl_function fn) {
  char need[16], have[16];
  char text[1536];
  int used =
      snprintf(text, sizeof(text), "%s needs NCCL >= %s", ncclshim_nccl_function_name(fn),
               ncclshim_format_version(ncclshim_nccl_function_version(fn), need, sizeof(need)));
  const char *joiner = "; loaded ";
  pthread_mutex_lock(&registry_lock);
  for (const ncclshim_nccl *h = registry; h != NULL; h = h->next_open) {
    if (h->status != NCCLSHIM_OK || h->present[fn]) continue;
    if (used > 0 && (size_t)used < sizeof(text)) {
      used += snprintf(text + used, sizeof(text) - (size_t)used, "%s%s from %s%s", joiner,
                       ncclshim_format_version(h->version, have, sizeof(have)), h->path,
                       h->version >= ncclshim_nccl_function_version(fn)
                           ? " (its version should have it: a broken or customised build)"
                           : "");
    }
    joiner = "; and ";
  }
  pthread_mutex_unlock(&registry_lock);
  ncclshim_set_error("%s", text);
}

#define RETURN_RESULT(code) return code;
#define RETURN_STRING(code) return ncclshim_last_error();
#define RETURN_VOID(code)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUBS_(name, version, policy, returns, n, params)                         \
  static NCCLSHIM_RETURNS(returns) absent_##name NCCLSHIM_PP_PARAMS(n, params) {  \
    note_absent(NCCLSHIM_FN_##name);                                              \
    RETURN_##returns(ncclInvalidUsage)                                            \
  }                                                                               \
  static NCCLSHIM_RETURNS(returns) missing_##name NCCLSHIM_PP_PARAMS(n, params) { \
    note_missing(NCCLSHIM_FN_##name);                                             \
    RETURN_##returns(ncclInvalidArgument)                                         \
  }
NCCLSHIM_NCCL_FUNCTIONS(STUBS_)
#pragma GCC diagnostic pop

/* With no library, the error string still comes from ncclshim's own table. */
static const char *absent_error_string(ncclResult_t result) {
  return ncclshim_nccl_result_string(result);
}

#define ABSENT_ENTRY_(name, version, policy, returns, n, params) .name = absent_##name,
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init" /* the one entry replaced below */
const ncclshim_nccl_table ncclshim_absent_table = {
    NCCLSHIM_NCCL_FUNCTIONS(ABSENT_ENTRY_).ncclGetErrorString = absent_error_string,
};
#pragma GCC diagnostic pop

#define FILL_MISSING_(name, version, policy, returns, n, params) \
  if (!nccl->present[NCCLSHIM_FN_##name]) nccl->table.name = missing_##name;
void ncclshim_fill_missing(ncclshim_nccl *nccl) { NCCLSHIM_NCCL_FUNCTIONS(FILL_MISSING_) }

const char *ncclshim_nccl_result_string(int result) {
  /* NCCL's own texts (ncclGetErrorString in src/init.cc). */
  static const char *const texts[] = {
      "no error",
      "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
      "unhandled system error (run with NCCL_DEBUG=INFO for details)",
      "internal error - please report this issue to the NCCL developers",
      "invalid argument (run with NCCL_DEBUG=WARN for details)",
      "invalid usage (run with NCCL_DEBUG=WARN for details)",
      "remote process exited or there was a network error",
      "NCCL operation in progress",
      "timeout",
  };
  return result >= 0 && (size_t)result < sizeof(texts) / sizeof(texts[0]) ? texts[result]
                                                                          : "unknown result code";
}
