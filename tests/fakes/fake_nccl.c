/* A fake libnccl.so.2, generated from ncclshim's function list. Each function records the
 * bytes of every argument it receives and returns a value the test chose, so tests prove that
 * calls through ncclshim arrive unchanged. The functions exported by one variant are chosen
 * by a version script (gen_fake_map.c); ncclGetVersion's behaviour by FAKE_VERSION_MODE.
 * Switched on at run time (fake_nccl_set_live), a few functions also act like NCCL's (see
 * fake_nccl.h): communicators, blocking or not, ncclMemAlloc, windows, groups, and modes that
 * stay in progress, fail asynchronously, hang in abort or give a NULL window, and the faults
 * between processes (a peer lost during a collective, an abort that takes its time). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_nccl.h"
#include "ncclshim/nccl_functions.h"

#ifndef FAKE_VERSION_CODE
#error "FAKE_VERSION_CODE must be set"
#endif
#define FAKE_VERSION_NORMAL 0
#define FAKE_VERSION_FAILS 1    /* returns ncclSystemError */
#define FAKE_VERSION_ZERO 2     /* writes 0 */
#define FAKE_VERSION_NEGATIVE 3 /* writes -5 */
#define FAKE_VERSION_SILENT 4   /* succeeds, writes nothing */
#ifndef FAKE_VERSION_MODE
#define FAKE_VERSION_MODE FAKE_VERSION_NORMAL
#endif

#define EXPORT __attribute__((visibility("default")))

/* Per thread: the last call this thread made (a watchdog thread polls while the test calls). */
static _Thread_local fake_nccl_call last;
static int next_result = ncclSuccess;
static atomic_int version_calls;
static atomic_int all_calls;

EXPORT const fake_nccl_call *fake_nccl_last_call(void) { return &last; }
EXPORT void fake_nccl_set_result(int result) { next_result = result; }
EXPORT int fake_nccl_version_calls(void) { return atomic_load(&version_calls); }
EXPORT int fake_nccl_calls(void) { return atomic_load(&all_calls); }

static void begin(const char *function) {
  atomic_fetch_add(&all_calls, 1);
  memset(&last, 0, sizeof(last));
  strncpy(last.function, function, sizeof(last.function) - 1);
  last.version_code = FAKE_VERSION_CODE;
}

static void record(const void *arg, size_t size) {
  if (last.nargs >= FAKE_MAX_ARGS) return;
  last.size[last.nargs] = size;
  memcpy(last.bytes[last.nargs], arg, size < FAKE_MAX_ARG_BYTES ? size : FAKE_MAX_ARG_BYTES);
  last.nargs++;
}

EXPORT ncclResult_t ncclGetVersion(int *version) {
  atomic_fetch_add(&version_calls, 1);
  if (version == NULL) return ncclInvalidArgument;
  switch (FAKE_VERSION_MODE) {
  case FAKE_VERSION_FAILS:
    return ncclSystemError;
  case FAKE_VERSION_ZERO:
    *version = 0;
    break;
  case FAKE_VERSION_NEGATIVE:
    *version = -5;
    break;
  case FAKE_VERSION_SILENT:
    break;
  default:
    *version = FAKE_VERSION_CODE;
    break;
  }
  return ncclSuccess;
}
EXPORT ncclResult_t pncclGetVersion(int *version) __attribute__((alias("ncclGetVersion")));

/* Calls one of its own public names the way NCCL does, through the dynamic symbol table, and
 * returns the address that call went to (the drop-in's, when the drop-in is global). */
EXPORT void *fake_nccl_call_self(void) {
  ncclGroupStart();
  return (void *)(uintptr_t)&ncclGroupStart;
}

static const char fake_string[] = "fake NCCL string";

/* ---- Behaviour, off until fake_nccl_set_live(1) -------------------------------------- */

#define NAME_(name, version, policy, role, returns, n, params) #name,
static const char *const names[] = {NCCLSHIM_NCCL_FUNCTIONS(NAME_)};
enum { MAX_PENDING = 16, WINDOWS = 64 };

static atomic_int live;
static atomic_int calls_of[NCCLSHIM_NCCL_FUNCTION_COUNT];
static atomic_int last_seq_of[NCCLSHIM_NCCL_FUNCTION_COUNT];
static atomic_int seq;
static atomic_int inject_left[NCCLSHIM_NCCL_FUNCTION_COUNT]; /* < 0: every call */
static int inject_result[NCCLSHIM_NCCL_FUNCTION_COUNT];
static atomic_int async_polls; /* ncclInProgress answers left; < 0: forever */
static int async_final;
static atomic_int abort_hang, abort_returns;
static pthread_mutex_t abort_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t abort_returned; /* on CLOCK_MONOTONIC, set up when the fake loads */
static atomic_int null_window, live_allocations, live_windows;
static char last_error_text[256];
static int gather_on, gather_rank = -1;
static char gather_from[128], gather_to[128];
static int prop_device_api, prop_multimem, prop_gin_type;
static fake_nccl_coll_config seen_coll;      /* the last ...Config collective's config */
static fake_nccl_encryption seen_encryption; /* ncclSetEncryption's */

static struct ncclComm {
  int blocking;
  int nranks;
} fake_comm = {1, 1}, fake_child = {1, 1};
static char windows[WINDOWS];
static int next_window, group_depth, pending_count;
static ncclshim_window_t *pending[MAX_PENDING]; /* windows NCCL has yet to fill in */
/* The pending windows are read by a watchdog's ncclCommGetAsyncError while an abort thread
 * drops them (hang_in_abort): one lock for the list. */
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static void drop_pending(void);

/* ---- Faults between processes: a peer lost during a collective, a slow abort ----------- */
/* A peer that dies while a collective runs: ncclCommGetAsyncError answers ncclSuccess (the
 * kernel runs, nothing is wrong yet) for `peer_polls` more polls, then the loss (e.g.
 * ncclRemoteError, as the socket transport reports it) on every later one. A slow abort:
 * ncclCommAbort takes abort_delay_ms before it returns. */
static atomic_int peer_polls = -1; /* < 0: no peer lost */
static int peer_loss;
static atomic_int abort_delay_ms;

EXPORT void fake_nccl_set_peer_lost(int polls, int loss) {
  peer_loss = loss;
  atomic_store(&peer_polls, polls);
}
EXPORT void fake_nccl_set_abort_delay(int ms) { atomic_store(&abort_delay_ms, ms); }

static void reset_faults(void) {
  atomic_store(&peer_polls, -1);
  atomic_store(&abort_delay_ms, 0);
}

/* 1 with *out set while the peer-lost script runs; 0 when it does not apply. */
static int peer_lost_answer(ncclResult_t *out) {
  int left = atomic_load(&peer_polls);
  if (left < 0) return 0;
  if (left > 0) {
    atomic_fetch_sub(&peer_polls, 1);
    *out = ncclSuccess;
  } else {
    *out = (ncclResult_t)peer_loss;
  }
  return 1;
}

static void slow_abort(void) {
  int ms = atomic_load(&abort_delay_ms);
  struct timespec delay = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (ms > 0 && nanosleep(&delay, &delay) != 0) {
  }
}

static int function_index(const char *function) {
  for (int i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++)
    if (strcmp(names[i], function) == 0) return i;
  return -1;
}

EXPORT void fake_nccl_reset(void) {
  atomic_store(&live, 0);
  for (int i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++) {
    atomic_store(&calls_of[i], 0);
    atomic_store(&last_seq_of[i], 0);
    atomic_store(&inject_left[i], 0);
  }
  atomic_store(&async_polls, 0);
  async_final = ncclSuccess;
  atomic_store(&abort_hang, 0);
  atomic_store(&abort_returns, 0);
  atomic_store(&null_window, 0);
  atomic_store(&live_allocations, 0);
  atomic_store(&live_windows, 0);
  last_error_text[0] = '\0';
  fake_comm.blocking = 1;
  fake_comm.nranks = 1;
  gather_on = 0;
  gather_rank = -1;
  prop_device_api = prop_multimem = prop_gin_type = 0;
  memset(&seen_coll, 0, sizeof(seen_coll));
  memset(&seen_encryption, 0, sizeof(seen_encryption));
  group_depth = 0;
  drop_pending();
  reset_faults();
}
EXPORT void fake_nccl_set_live(int on) { atomic_store(&live, on); }
EXPORT int fake_nccl_count(const char *function) {
  int i = function_index(function);
  return i < 0 ? -1 : atomic_load(&calls_of[i]);
}
EXPORT int fake_nccl_last_seq(const char *function) {
  int i = function_index(function);
  return i < 0 ? -1 : atomic_load(&last_seq_of[i]);
}
EXPORT void fake_nccl_inject(const char *function, int result, int times) {
  int i = function_index(function);
  if (i < 0) return;
  inject_result[i] = result;
  atomic_store(&inject_left[i], times);
}
EXPORT void fake_nccl_set_async(int in_progress_polls, int final_result) {
  async_final = final_result;
  atomic_store(&async_polls, in_progress_polls);
}
EXPORT void fake_nccl_set_abort_hang(int on) { atomic_store(&abort_hang, on); }
EXPORT int fake_nccl_abort_returns(void) { return atomic_load(&abort_returns); }
__attribute__((constructor)) static void init_abort_returned(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&abort_returned, &attr);
  pthread_condattr_destroy(&attr);
}
EXPORT int fake_nccl_wait_abort_returns(int count, int timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&abort_lock);
  while (atomic_load(&abort_returns) < count &&
         pthread_cond_timedwait(&abort_returned, &abort_lock, &until) != ETIMEDOUT) {
  }
  pthread_mutex_unlock(&abort_lock);
  return atomic_load(&abort_returns);
}
EXPORT void fake_nccl_set_null_window(int on) { atomic_store(&null_window, on); }
EXPORT void fake_nccl_set_last_error(const char *text) {
  strncpy(last_error_text, text ? text : "", sizeof(last_error_text) - 1);
}
EXPORT int fake_nccl_live_allocations(void) { return atomic_load(&live_allocations); }
EXPORT int fake_nccl_live_windows(void) { return atomic_load(&live_windows); }

/* The value of parameter `i` of the running call, whose address is args[i]. */
#define ARG(type, i) (*(type const *)args[i])

static void fill_pending(void) {
  pthread_mutex_lock(&pending_lock);
  for (int i = 0; i < pending_count; i++) {
    *pending[i] = (ncclshim_window_t)(void *)&windows[next_window++ % WINDOWS];
    atomic_fetch_add(&live_windows, 1);
  }
  pending_count = 0;
  pthread_mutex_unlock(&pending_lock);
}

static void drop_pending(void) {
  pthread_mutex_lock(&pending_lock);
  pending_count = 0;
  pthread_mutex_unlock(&pending_lock);
}

static int count_pending(void) {
  pthread_mutex_lock(&pending_lock);
  int n = pending_count;
  pthread_mutex_unlock(&pending_lock);
  return n;
}

/* NCCL_COMM_BLOCKING, as NCCL reads it: when set, it overrides the config's blocking. */
static void env_blocking(struct ncclComm *comm) {
  const char *env = getenv("NCCL_COMM_BLOCKING");
  if (env != NULL && *env != '\0') comm->blocking = atoi(env) != 0;
}

static ncclResult_t init_comm(ncclComm_t *out, int nranks, const ncclConfig_t *config) {
  fake_comm.blocking = 1;
  fake_comm.nranks = nranks > 0 ? nranks : 1;
  if (config != NULL && config->size >= offsetof(ncclConfig_t, blocking) + sizeof(int) &&
      config->blocking != INT_MIN)
    fake_comm.blocking = config->blocking;
  env_blocking(&fake_comm);
  *out = &fake_comm;
  return fake_comm.blocking ? ncclSuccess : ncclInProgress;
}

/* ncclCommSplit: the child (blocking as its config says) is written at once; the call answers
 * as its parent's mode does, as NCCL's group rule makes it. */
static ncclResult_t split_comm(ncclComm_t parent, ncclComm_t *out, const ncclConfig_t *config) {
  fake_child.blocking = 1;
  fake_child.nranks = fake_comm.nranks;
  if (config != NULL && config->size >= offsetof(ncclConfig_t, blocking) + sizeof(int) &&
      config->blocking != INT_MIN)
    fake_child.blocking = config->blocking;
  env_blocking(&fake_child);
  *out = &fake_child;
  return (parent == &fake_child ? fake_child : fake_comm).blocking ? ncclSuccess : ncclInProgress;
}

static ncclResult_t async_error(ncclResult_t *out) {
  if (peer_lost_answer(out)) return ncclSuccess;
  int left = atomic_load(&async_polls);
  if (left != 0) {
    if (left > 0) atomic_fetch_sub(&async_polls, 1);
    *out = ncclInProgress;
    return ncclSuccess;
  }
  if (async_final == ncclSuccess && group_depth == 0) fill_pending();
  *out = (ncclResult_t)async_final;
  return ncclSuccess;
}

static ncclResult_t hang_in_abort(void) {
  slow_abort();
  struct timespec ms = {0, 1000000};
  while (atomic_load(&abort_hang)) nanosleep(&ms, NULL);
  drop_pending(); /* an aborted communicator fills in no window any more */
  pthread_mutex_lock(&abort_lock);
  atomic_fetch_add(&abort_returns, 1);
  pthread_cond_broadcast(&abort_returned);
  pthread_mutex_unlock(&abort_lock);
  return ncclSuccess;
}

static ncclResult_t mem_alloc(void **ptr, size_t size) {
  void *p = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == NULL) return ncclSystemError;
  atomic_fetch_add(&live_allocations, 1);
  *ptr = p;
  return ncclSuccess;
}

static ncclResult_t mem_free(void *ptr) {
  if (ptr != NULL) atomic_fetch_sub(&live_allocations, 1);
  free(ptr);
  return ncclSuccess;
}

/* Filled at once, at group end, or once the communicator stops being in progress. */
static ncclResult_t window_register(ncclshim_window_t *win) {
  if (atomic_load(&null_window)) return ncclSuccess; /* like 2.28: *win left untouched */
  pthread_mutex_lock(&pending_lock);
  int full = pending_count == MAX_PENDING;
  if (!full) pending[pending_count++] = win;
  pthread_mutex_unlock(&pending_lock);
  if (full) return ncclInternalError;
  if (group_depth > 0) return ncclSuccess;
  if (!fake_comm.blocking) return ncclInProgress;
  fill_pending();
  return ncclSuccess;
}

/* ---- The all-gather of host memory, with one rank's slot edited; the properties -------- */
/* Once fake_nccl_set_gather_edit was called, ncclAllGather copies sendbuff into every rank's
 * slot (the buffers are host memory: the fake CUDA's "device" memory is malloc'd), then in slot
 * gather_rank replaces gather_from by gather_to, as if that rank had sent something else.
 * ncclCommQueryProperties writes the layout of the struct's version (2.29.4+, or 2.29.2's
 * shorter one with a one-byte ginType): rank 0, nranks, device 0, and what
 * fake_nccl_set_properties chose. */

EXPORT void fake_nccl_set_gather_edit(int rank, const char *from, const char *to) {
  gather_on = 1;
  gather_rank = rank;
  snprintf(gather_from, sizeof(gather_from), "%s", from ? from : "");
  snprintf(gather_to, sizeof(gather_to), "%s", to ? to : "");
}
EXPORT void fake_nccl_set_properties(int device_api, int multimem, int gin_type) {
  prop_device_api = device_api;
  prop_multimem = multimem;
  prop_gin_type = gin_type;
}

static void edit_slot(char *slot, size_t size) {
  char *at = gather_from[0] ? strstr(slot, gather_from) : NULL;
  if (at == NULL || strnlen(slot, size) == size) return;
  char rest[4096];
  snprintf(rest, sizeof(rest), "%s", at + strlen(gather_from));
  snprintf(at, size - (size_t)(at - slot), "%s%s", gather_to, rest);
}

static ncclResult_t all_gather(const void *send, void *recv, size_t count, ncclDataType_t type) {
  static const size_t bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  if (!gather_on || (unsigned)type >= sizeof(bytes) / sizeof(bytes[0]))
    return ncclSuccess; /* as every other call: nothing done */
  size_t size = count * bytes[type];
  for (int r = 0; r < fake_comm.nranks; r++) {
    char *slot = (char *)recv + (size_t)r * size;
    memcpy(slot, send, size);
    if (r == gather_rank) edit_slot(slot, size);
  }
  return fake_comm.blocking ? ncclSuccess : ncclInProgress;
}

static ncclResult_t query_properties(void *out) {
  struct properties {
    size_t size;
    unsigned int magic, version;
    int rank, nRanks, cudaDev, nvmlDev;
    _Bool deviceApiSupport, multimemSupport;
    int ginType, nLsaTeams;
    _Bool hostRmaSupport;
    int railedGinType;
  } p;
  memcpy(&p, out, sizeof(p));
  if (p.magic != 0xcafebeefu || (int)p.version > FAKE_VERSION_CODE) return ncclInvalidUsage;
  p.rank = 0;
  p.nRanks = fake_comm.nranks;
  p.cudaDev = p.nvmlDev = 0;
  p.deviceApiSupport = prop_device_api;
  p.multimemSupport = prop_multimem;
  p.ginType = prop_gin_type;
  p.nLsaTeams = 1;
  p.hostRmaSupport = 0;
  p.railedGinType = 0;
  if (p.version < 22904) { /* 2.29.2 and 2.29.3: up to ginType, a one-byte enum there */
    unsigned char gin_type = (unsigned char)prop_gin_type;
    size_t at = offsetof(struct properties, multimemSupport) + 1;
    memcpy(out, &p, at);
    memcpy((char *)out + at, &gin_type, 1);
    return ncclSuccess;
  }
  memcpy(out, &p, sizeof(p));
  return ncclSuccess;
}

/* ---- The versioned structs of 2.32.3: per-collective config, encryption ---------------- */
/* In live mode a ...Config collective and ncclSetEncryption read their struct as NCCL does:
 * NULL is "no config"; otherwise NCCL_API_MAGIC, a size that holds the header and a version
 * no newer than the library, or ncclInvalidArgument. What arrived is kept for the tests. */
EXPORT const fake_nccl_coll_config *fake_nccl_last_coll_config(void) { return &seen_coll; }
EXPORT const fake_nccl_encryption *fake_nccl_last_encryption(void) { return &seen_encryption; }

/* 1 when a struct starting with size, magic, version is one this library reads. */
static int versioned(const void *p, size_t *size, unsigned *magic, unsigned *version) {
  memcpy(size, p, sizeof(*size));
  memcpy(magic, (const char *)p + 8, sizeof(*magic));
  memcpy(version, (const char *)p + 12, sizeof(*version));
  return *magic == 0xcafebeefu && *size >= 16 && *version <= FAKE_VERSION_CODE;
}

static ncclResult_t coll_config(const ncclshim_coll_config_t *config) {
  memset(&seen_coll, 0, sizeof(seen_coll));
  seen_coll.calls = 1;
  if (config == NULL) return ncclSuccess;
  seen_coll.given = 1;
  if (!versioned(config, &seen_coll.size, &seen_coll.magic, &seen_coll.version))
    return ncclInvalidArgument;
  ncclshim_coll_config_t c = NCCL_COLLCONFIG_INITIALIZER; /* what a shorter struct lacks */
  memcpy(&c, config, seen_coll.size < sizeof(c) ? seen_coll.size : sizeof(c));
  snprintf(seen_coll.alg, sizeof(seen_coll.alg), "%s", c.algSelection ? c.algSelection : "");
  seen_coll.max_ctas = c.maxCTAs;
  seen_coll.tag = c.userProfilerTag;
  seen_coll.event = c.launchCompletionEvent;
  return ncclSuccess;
}

static ncclResult_t set_encryption(const ncclshim_encryption_config_t *config) {
  memset(&seen_encryption, 0, sizeof(seen_encryption));
  if (config == NULL) return ncclInvalidArgument;
  if (!versioned(config, &seen_encryption.size, &seen_encryption.magic, &seen_encryption.version))
    return ncclInvalidArgument;
  seen_encryption.mode = config->mode;
  snprintf(seen_encryption.psk, sizeof(seen_encryption.psk), "%s", config->psk ? config->psk : "");
  return ncclSuccess;
}

static ncclResult_t group_end(void) {
  if (group_depth > 0) group_depth--;
  if (group_depth > 0 || count_pending() == 0) return ncclSuccess;
  if (!fake_comm.blocking) return ncclInProgress;
  fill_pending();
  return ncclSuccess;
}

/* ncclGroupSimulateEnd: as NCCL, the group ends either way; given a simInfo (which must
 * carry NCCL_SIM_INFO_INITIALIZER's magic) nothing is launched, only estimated. */
static ncclResult_t simulate_end(const ncclshim_sim_info_t *info) {
  if (info == NULL) return group_end();
  if (group_depth > 0) group_depth--;
  return info->magic == 0x74685283u ? ncclSuccess : ncclInvalidArgument;
}

static ncclResult_t answer(int fn, const void *const *args) {
  atomic_fetch_add(&calls_of[fn], 1);
  atomic_store(&last_seq_of[fn], atomic_fetch_add(&seq, 1) + 1);
  int left = atomic_load(&inject_left[fn]);
  if (left != 0) {
    if (left > 0) atomic_fetch_sub(&inject_left[fn], 1);
    return (ncclResult_t)inject_result[fn];
  }
  if (!atomic_load(&live)) return (ncclResult_t)next_result;
  switch (fn) {
  case NCCLSHIM_FN_ncclCommInitRank:
    return init_comm(ARG(ncclComm_t *, 0), ARG(int, 1), NULL);
  case NCCLSHIM_FN_ncclCommInitRankConfig:
    return init_comm(ARG(ncclComm_t *, 0), ARG(int, 1), ARG(ncclConfig_t *, 4));
  case NCCLSHIM_FN_ncclCommGetAsyncError:
    return async_error(ARG(ncclResult_t *, 1));
  case NCCLSHIM_FN_ncclCommSplit:
    return split_comm(ARG(ncclComm_t, 0), ARG(ncclComm_t *, 3), ARG(ncclConfig_t *, 4));
  case NCCLSHIM_FN_ncclCommFinalize:
    return (ARG(ncclComm_t, 0) == &fake_child ? fake_child : fake_comm).blocking ? ncclSuccess
                                                                                 : ncclInProgress;
  case NCCLSHIM_FN_ncclCommAbort:
    return hang_in_abort();
  case NCCLSHIM_FN_ncclMemAlloc:
    return mem_alloc(ARG(void **, 0), ARG(size_t, 1));
  case NCCLSHIM_FN_ncclMemFree:
    return mem_free(ARG(void *, 0));
  case NCCLSHIM_FN_ncclCommWindowRegister:
    return window_register(ARG(ncclshim_window_t *, 3));
  case NCCLSHIM_FN_ncclCommWindowDeregister:
    atomic_fetch_sub(&live_windows, 1);
    return ncclSuccess;
  case NCCLSHIM_FN_ncclAllGather:
    return all_gather(ARG(const void *, 0), ARG(void *, 1), ARG(size_t, 2), ARG(ncclDataType_t, 3));
  case NCCLSHIM_FN_ncclCommQueryProperties:
    return query_properties(ARG(void *, 1));
  case NCCLSHIM_FN_ncclAllReduceConfig:
  case NCCLSHIM_FN_ncclBroadcastConfig:
  case NCCLSHIM_FN_ncclAllGatherConfig:
  case NCCLSHIM_FN_ncclReduceScatterConfig:
  case NCCLSHIM_FN_ncclAlltoAllConfig:
  case NCCLSHIM_FN_ncclGatherConfig:
  case NCCLSHIM_FN_ncclScatterConfig:
  case NCCLSHIM_FN_ncclReduceConfig: { /* the config is the last argument */
    int last = 0;
    while (args[last + 1] != NULL) last++;
    return coll_config(ARG(const ncclshim_coll_config_t *, last));
  }
  case NCCLSHIM_FN_ncclSetEncryption:
    return set_encryption(ARG(const ncclshim_encryption_config_t *, 0));
  case NCCLSHIM_FN_ncclGroupStart:
    group_depth++;
    return ncclSuccess;
  case NCCLSHIM_FN_ncclGroupEnd:
    return group_end();
  case NCCLSHIM_FN_ncclGroupSimulateEnd:
    return simulate_end(ARG(const ncclshim_sim_info_t *, 0));
  default:
    return ncclSuccess;
  }
}

static const char *string_answer(int fn) {
  atomic_fetch_add(&calls_of[fn], 1);
  if (fn == NCCLSHIM_FN_ncclGetLastError && last_error_text[0] != '\0') return last_error_text;
  return fake_string;
}

/* ---- The device API's int and ncclTeam_t answers ------------------------------------- */

/* Chosen by the test through fake_nccl_set_result, like a RESULT function's answer: an int
 * function returns that value, a team function {value, value + 1, value + 2}. */
static int int_answer(int fn) {
  atomic_fetch_add(&calls_of[fn], 1);
  return next_result;
}

static ncclshim_team_t team_answer(int fn) {
  atomic_fetch_add(&calls_of[fn], 1);
  return (ncclshim_team_t){
      .nRanks = next_result, .rank = next_result + 1, .stride = next_result + 2};
}

/* ---- Generated entry points ------------------------------------------------------------ */

#define RECORD_(type, name) record(&name, sizeof(name));
#define ADDRESS_(type, name) (const void *)&name,
#define FINISH_RESULT(name, n, params)                                      \
  const void *const args_[] = {NCCLSHIM_PP_EACH(n, ADDRESS_, params) NULL}; \
  return answer(NCCLSHIM_FN_##name, args_);
#define FINISH_STRING(name, n, params) return string_answer(NCCLSHIM_FN_##name);
#define FINISH_VOID(name, n, params) atomic_fetch_add(&calls_of[NCCLSHIM_FN_##name], 1);
#define FINISH_INT(name, n, params) return int_answer(NCCLSHIM_FN_##name);
#define FINISH_TEAM(name, n, params) return team_answer(NCCLSHIM_FN_##name);
#define FAKE_(name, version, policy, role, returns, n, params)           \
  EXPORT NCCLSHIM_RETURNS(returns)                                       \
  name NCCLSHIM_PP_PARAMS(n, params) {                                   \
    begin(#name);                                                        \
    NCCLSHIM_PP_EACH(n, RECORD_, params)                                 \
    FINISH_##returns(name, n, params)                                    \
  }                                                                      \
  EXPORT NCCLSHIM_RETURNS(returns) p##name NCCLSHIM_PP_PARAMS(n, params) \
      __attribute__((alias(#name)));

/* Every row but ncclGetVersion, which is written out above: PROBE_ turns that one name into
 * "~, 1," so that NCCLSHIM_PP_SELECT picks 1 for it and 0 for every other name. */
#define PROBE_ncclGetVersion ~, 1,
#define IS_GET_VERSION(name) NCCLSHIM_PP_SELECT(PROBE_##name, 0)
#define GENERATE_0(...) FAKE_(__VA_ARGS__)
#define GENERATE_1(...)
#define GENERATE_(name, ...) NCCLSHIM_PP_CAT(GENERATE_, IS_GET_VERSION(name))(name, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(GENERATE_)
