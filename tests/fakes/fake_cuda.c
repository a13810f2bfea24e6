/* The fake libcuda.so.1: its exports, generated from ncclshim's list of driver functions
 * (NCCLSHIM_CUDA_FUNCTIONS) and the fake's own extra rows (fake_cuda_state.h). Built in
 * several variants by -D macros (tests/fakes/meson.build):
 *   FAKE_DRIVER_VERSION  what cuDriverGetVersion answers (11020, 13000, ...)
 *   FAKE_BOOTSTRAP       0: no cuGetProcAddress at all (drivers < 11.3); 1: only the 11.3
 *                        4-argument cuGetProcAddress; 2: that and cuGetProcAddress_v2 (12.0+)
 *   FAKE_STUB            1: every function answers CUDA_ERROR_STUB_LIBRARY (34), as the
 *                        toolkit's stub does
 *   FAKE_INIT_RESULT     what cuInit answers when it does not succeed (100: no device)
 * A BASE row is exported under its name, a V2 row as NAME_v2 and, for the old ABI, as NAME,
 * which answers 999 ("wrong ABI": a correct binding never calls it) unless
 * NCCLSHIM_CUDA_OLDER_ABIS says its signature is the same. Each export logs and counts its
 * call, keeps its arguments, aborts on a destroyed stream, applies the injected delays and
 * failures (fake_cuda_inject, fake_cuda_slow), then runs the row's behaviour, fake_NAME
 * (fake_cuda_device.c, fake_cuda_stream.c). Like the real driver, cuGetProcAddress refuses a
 * request above its own version and gives the newest ABI at or before the version asked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_state.h"

#define EXPORT __attribute__((visibility("default")))

enum { STUB_LIBRARY = 34, WRONG_ABI = 999, RULES = 32 };

EXPORT fake_cuda_log fake_log;
EXPORT fake_cuda_control fake_control;

#define NAME_(name, ask, policy, abi, n, params) #name,
static const char *const function_names[FAKE_FN_COUNT] = {FAKE_CUDA_ALL_FUNCTIONS(NAME_)};

static int calls[FAKE_FN_COUNT];
static fake_cuda_args last_args[FAKE_FN_COUNT];

/* An injected failure or delay: on `function`, for calls naming `stream` when on_stream. */
static struct rule {
  int used, function, on_stream, result, times, ms;
  CUstream stream;
} rules[RULES];

static int function_index(const char *name) {
  for (int i = 0; name != NULL && i < FAKE_FN_COUNT; i++)
    if (strcmp(function_names[i], name) == 0) return i;
  return -1;
}

static int rule_matches(const struct rule *r, int function, int has_stream, CUstream stream) {
  return r->used && r->function == function &&
         (!r->on_stream || (has_stream && r->stream == stream));
}

/* The part of every call before its behaviour: 0 to go on, else what the call answers. */
static ncclshim_cu_result enter(int function, const char *exported, const unsigned long long *args,
                                int nargs, int has_stream, CUstream stream) {
  pthread_mutex_lock(&fake_lock);
  if (fake_log.call_count < FAKE_CUDA_LOG_SIZE)
    snprintf(fake_log.calls[fake_log.call_count++], FAKE_CUDA_NAME_SIZE, "%s", exported);
  calls[function]++;
  fake_cuda_args *a = &last_args[function];
  a->nargs = nargs;
  for (int i = 0; i < nargs && i < FAKE_CUDA_MAX_ARGS; i++) a->arg[i] = args[i];
  a->thread = (unsigned long)pthread_self();
  if (FAKE_STUB) {
    pthread_mutex_unlock(&fake_lock);
    return STUB_LIBRARY;
  }
  ncclshim_cu_result ignored;
  if (has_stream) (void)fake_stream_of(exported, stream, &ignored); /* aborts when destroyed */
  int sleep_ms = 0;
  for (int i = 0; i < RULES; i++)
    if (rule_matches(&rules[i], function, has_stream, stream) && rules[i].ms > 0)
      sleep_ms = rules[i].ms;
  pthread_mutex_unlock(&fake_lock);
  fake_sleep_ms(sleep_ms);
  ncclshim_cu_result rc = 0;
  pthread_mutex_lock(&fake_lock);
  for (int i = 0; i < RULES && rc == 0; i++) {
    struct rule *r = &rules[i];
    if (!rule_matches(r, function, has_stream, stream) || r->times == 0) continue;
    rc = r->result;
    if (r->times > 0) r->times--;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

static struct rule *rule_for(int function, int on_stream, CUstream stream) { /* under lock */
  struct rule *unused = NULL;
  for (int i = 0; i < RULES; i++) {
    struct rule *r = &rules[i];
    if (r->used && r->function == function && r->on_stream == on_stream &&
        (!on_stream || r->stream == stream))
      return r;
    if (!r->used && unused == NULL) unused = r;
  }
  if (unused == NULL) fake_die("fake_cuda_inject", "no room for another rule, at", NULL);
  *unused = (struct rule){1, function, on_stream, 0, 0, 0, on_stream ? stream : NULL};
  return unused;
}

static int known_function(const char *control, const char *function) {
  int i = function_index(function);
  if (i < 0) {
    fprintf(stderr, "fake cuda: %s: no driver function named %s\n", control,
            function ? function : "(null)");
    abort();
  }
  return i;
}

EXPORT void fake_cuda_inject(const char *function, int on_stream, CUstream stream, int result,
                             int times) {
  int i = known_function(__func__, function);
  pthread_mutex_lock(&fake_lock);
  struct rule *r = rule_for(i, on_stream, stream);
  r->result = result;
  r->times = times;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_slow(const char *function, int on_stream, CUstream stream, int ms) {
  int i = known_function(__func__, function);
  pthread_mutex_lock(&fake_lock);
  rule_for(i, on_stream, stream)->ms = ms;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT int fake_cuda_count(const char *function) {
  int i = function_index(function);
  pthread_mutex_lock(&fake_lock);
  int n = i < 0 ? -1 : calls[i];
  pthread_mutex_unlock(&fake_lock);
  return n;
}

EXPORT int fake_cuda_last_args(const char *function, fake_cuda_args *out) {
  int i = function_index(function), rc = -1;
  pthread_mutex_lock(&fake_lock);
  if (i >= 0 && calls[i] > 0) {
    *out = last_args[i];
    rc = 0;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

EXPORT void fake_cuda_reset(void) {
  pthread_mutex_lock(&fake_lock);
  memset(&fake_log, 0, sizeof(fake_log));
  memset(&fake_control, 0, sizeof(fake_control));
  memset(calls, 0, sizeof(calls));
  memset(last_args, 0, sizeof(last_args));
  memset(rules, 0, sizeof(rules));
  fake_capture_result = fake_capture_status = 0;
  fake_reset_streams();
  fake_reset_memory();
  fake_reset_contexts();
  pthread_mutex_unlock(&fake_lock);
}

/* ---- Generated from the lists: the exports ----------------------------------------------- */

#define OLDER_(name, ask, abi) #name,
static const char *const same_signature_older[] = {NCCLSHIM_CUDA_OLDER_ABIS(OLDER_)};

/* Whether `name`'s old ABI has the row's signature (then it is real, not "wrong ABI"). */
static int older_is_real(const char *name) {
  for (size_t i = 0; i < sizeof(same_signature_older) / sizeof(same_signature_older[0]); i++)
    if (strcmp(same_signature_older[i], name) == 0) return 1;
  return 0;
}

/* Each argument as an integer, and the first CUstream argument found. */
#define ARG_(type, name) , (unsigned long long)(uintptr_t)(name)
#define STREAM_(type, name)                                  \
  if (_Generic((name), CUstream : 1, default : 0) && !has) { \
    has = 1;                                                 \
    stream = (CUstream)(uintptr_t)(name);                    \
  }
#define ENTER_(name, exported, n, params)                                               \
  unsigned long long args[] = {0 NCCLSHIM_PP_EACH(n, ARG_, params)};                    \
  int has = 0;                                                                          \
  CUstream stream = NULL;                                                               \
  NCCLSHIM_PP_EACH(n, STREAM_, params)                                                  \
  ncclshim_cu_result early = enter(FAKE_FN_##name, exported, args + 1, n, has, stream); \
  (void)stream;                                                                         \
  if (early != 0) return early;
#define EXPORT_BASE_(name, n, params)                            \
  EXPORT ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) { \
    ENTER_(name, #name, n, params)                               \
    return fake_##name NCCLSHIM_PP_ARGS(n, params);              \
  }
/* The old ABI's export takes the new parameters: when they differ it reads none of them. */
#define EXPORT_V2_(name, n, params)                                              \
  EXPORT ncclshim_cu_result name##_v2 NCCLSHIM_PP_PARAMS(n, params) {            \
    ENTER_(name, #name "_v2", n, params)                                         \
    return fake_##name NCCLSHIM_PP_ARGS(n, params);                              \
  }                                                                              \
  EXPORT ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) {                 \
    if (!older_is_real(#name)) {                                                 \
      unsigned long long none[1] = {0};                                          \
      ncclshim_cu_result early = enter(FAKE_FN_##name, #name, none, 0, 0, NULL); \
      return early != 0 ? early : WRONG_ABI;                                     \
    }                                                                            \
    ENTER_(name, #name, n, params)                                               \
    return fake_##name NCCLSHIM_PP_ARGS(n, params);                              \
  }
#define EXPORT_(name, ask, policy, abi, n, params) EXPORT_##abi##_(name, n, params)
FAKE_CUDA_ALL_FUNCTIONS(EXPORT_)

/* ABIs newer than the ones the list asks for (CUDA 13.0's): a correct binding never gets
 * them. */
EXPORT ncclshim_cu_result cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  (void)device, (void)ctx;
  unsigned long long none[1] = {0};
  ncclshim_cu_result early = enter(FAKE_FN_cuCtxGetDevice, __func__, none, 0, 0, NULL);
  return early != 0 ? early : WRONG_ABI;
}
EXPORT ncclshim_cu_result cuCtxSynchronize_v2(CUcontext ctx) {
  (void)ctx;
  unsigned long long none[1] = {0};
  ncclshim_cu_result early = enter(FAKE_FN_cuCtxSynchronize, __func__, none, 0, 0, NULL);
  return early != 0 ? early : WRONG_ABI;
}

#if FAKE_BOOTSTRAP > 0
typedef void (*any_fn)(void);
/* Every ABI of every function: base name, the version that introduced it, the export. A V2
 * row's old ABI is given the first driver API's version, 2.0: the binding asks for a row's
 * version or an older ABI's (NCCLSHIM_CUDA_OLDER_ABIS), never one in between. */
#define VARIANT_BASE_(name, ask) {#name, ask, (any_fn)name},
#define VARIANT_V2_(name, ask) {#name, 2000, (any_fn)name}, {#name, ask, (any_fn)name##_v2},
#define VARIANT_(name, ask, policy, abi, n, params) VARIANT_##abi##_(name, ask)
static const struct {
  const char *name;
  int since;
  any_fn fn;
} variants[] = {
    FAKE_CUDA_ALL_FUNCTIONS(VARIANT_){"cuCtxGetDevice", 13000, (any_fn)cuCtxGetDevice_v2},
    {"cuCtxSynchronize", 13000, (any_fn)cuCtxSynchronize_v2},
};
/* The driver's rules (docs/cuda.md): a version above the driver's is INVALID_VALUE; else the
 * newest ABI introduced at or before the version asked. Not found: the _v2 entry answers 0
 * with NULL and a symbol status, the 11.3 entry answers NOT_FOUND. */
static int proc_address(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *symbol_status, int is_v2) {
  int rc = 0;
  if (FAKE_STUB) {
    rc = STUB_LIBRARY;
  } else if (symbol == NULL || pfn == NULL || version > FAKE_DRIVER_VERSION || flags > 2) {
    rc = 1;
  } else {
    int best = -1, known = 0;
    for (int i = 0; i < (int)(sizeof(variants) / sizeof(variants[0])); i++) {
      if (strcmp(variants[i].name, symbol) != 0) continue;
      known = 1;
      if (variants[i].since <= version && (best < 0 || variants[i].since > variants[best].since))
        best = i;
    }
    if (best >= 0) {
      memcpy(pfn, &variants[best].fn, sizeof(*pfn));
      if (symbol_status) *symbol_status = 0;
    } else if (is_v2) {
      *pfn = NULL;
      if (symbol_status) *symbol_status = known ? 2 : 1;
    } else {
      rc = 500;
    }
  }
  pthread_mutex_lock(&fake_lock);
  if (fake_log.request_count < FAKE_CUDA_LOG_SIZE) {
    fake_cuda_request *r = &fake_log.requests[fake_log.request_count++];
    snprintf(r->symbol, sizeof(r->symbol), "%s", symbol ? symbol : "(null)");
    r->version = version;
    r->flags = flags;
    r->result = rc;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
  return proc_address(symbol, pfn, version, flags, NULL, 0);
}
#endif

#if FAKE_BOOTSTRAP > 1
EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                               unsigned long long flags, int *symbol_status) {
  return proc_address(symbol, pfn, version, flags, symbol_status, 1);
}
#endif
