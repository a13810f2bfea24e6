/* libncclshim-nccl: NCCL's own function names (and pnccl profiling aliases), each forwarding
 * to the process-wide ncclshim table, so that a program built against nccl.h links here
 * instead of libnccl and runs on whatever NCCL is installed.
 *
 * Nothing happens at load time. The first call loads NCCL (once, thread-safely); after that
 * each call costs one load of a cached table pointer and an indirect jump. With no NCCL every
 * call returns ncclSystemError, and ncclGetErrorString / ncclGetLastError say what was
 * searched. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "../nccl/nccl_stub_set.h"

#define EXPORT __attribute__((visibility("default")))

/* ncclshim's search skips any library that exports this name: it is not NCCL. */
EXPORT const char ncclshim_dropin_identity[] = "ncclshim drop-in NCCL library";

/* Names here must not collide with any parameter name of the list. */
static _Atomic(const ncclshim_nccl_table *) cached;

/* Without NCCL, every entry returns ncclSystemError and keeps the search's summary. */
static char absent_summary[2048];

static const char *absent_message(void) { return absent_summary; }

/* The message was written once, at load: nothing to note per call. */
static void absent_note(enum ncclshim_nccl_function fn) { (void)fn; }
#define absent_result ncclSystemError
#define absent_text absent_message
#define ABSENT_(...) NCCLSHIM_NCCL_STUB(absent, __VA_ARGS__)
#define ABSENT_ENTRY_(...) NCCLSHIM_NCCL_STUB_ENTRY(absent, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(ABSENT_)
static const ncclshim_nccl_table absent_table = {NCCLSHIM_NCCL_FUNCTIONS(ABSENT_ENTRY_)};

static void load(void) {
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  const ncclshim_nccl_table *table = ncclshim_nccl_functions(nccl);
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK) {
    snprintf(absent_summary, sizeof(absent_summary), "ncclshim drop-in: no usable NCCL (%s)",
             ncclshim_nccl_message(nccl));
    table = &absent_table;
  }
  atomic_store_explicit(&cached, table, memory_order_release);
}

/* The first call: kept out of line so that every forwarder's fast path stays a load, a test
 * and a tail jump. */
__attribute__((noinline, cold)) static const ncclshim_nccl_table *first_table(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, load);
  return atomic_load_explicit(&cached, memory_order_acquire);
}

static inline const ncclshim_nccl_table *current_table(void) {
  const ncclshim_nccl_table *t = atomic_load_explicit(&cached, memory_order_acquire);
  return __builtin_expect(t != NULL, 1) ? t : first_table();
}

#define FORWARD_RESULT(call) return call;
#define FORWARD_STRING(call) return call;
#define FORWARD_VOID(call) call;
#define FORWARD_INT(call) return call;
#define FORWARD_TEAM(call) return call;
#define EXPORT_(name, version, policy, returns, n, params)                                 \
  EXPORT NCCLSHIM_RETURNS(returns)                                                         \
  name NCCLSHIM_PP_PARAMS(n, params){FORWARD_##returns(                                    \
      current_table()->name NCCLSHIM_PP_ARGS(n, params))} EXPORT NCCLSHIM_RETURNS(returns) \
      p##name NCCLSHIM_PP_PARAMS(n, params) __attribute__((alias(#name)));
NCCLSHIM_NCCL_FUNCTIONS(EXPORT_)
