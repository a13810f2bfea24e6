/* libncclshim-nccl: NCCL's own function names (and pnccl profiling aliases), each forwarding
 * to the NCCL that ncclshim's loader finds, so that a program built against nccl.h links here
 * instead of libnccl and runs on whatever NCCL is installed, or runs under it unchanged with
 * LD_PRELOAD (docs/dropin.md).
 *
 * Nothing happens at load time. The first call loads NCCL (once, thread-safely); after that
 * each call costs one load of a cached table pointer and an indirect jump. With no NCCL every
 * call returns ncclSystemError, and ncclGetErrorString / ncclGetLastError say what was
 * searched. With NCCLSHIM_RECORD set, the cached table is the flight recorder's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "src/internal.h"
#include "src/nccl/nccl_names.h"
#include "src/nccl/nccl_stub_set.h"
#include "checks.h"
#include "dropin.h"
#include "interpose.h"
#include "record.h"
#include "say.h"

#define EXPORT __attribute__((visibility("default")))

/* ncclshim's search skips any library that exports this name: it is not NCCL. */
EXPORT const char NCCLSHIM_DROPIN_MARKER[] = "ncclshim drop-in NCCL library";

/* Names here must not collide with any parameter name of the list. */
static _Atomic(const ncclshim_nccl_table *) cached;

/* ---- No NCCL: every entry returns ncclSystemError and keeps the search's summary. ---- */
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

/* ---- NCCL loaded: its own entries, except two kinds. A function it lacks answers with
 * ncclshim's stub, whose message ("ncclX needs NCCL >= 2.27.3 ...") the thread's next
 * ncclGetLastError returns once, in place of NCCL's. ---- */
static const ncclshim_nccl_table *loaded_table;
static ncclshim_nccl_table forwarding;

#define UNAVAILABLE_(name, version, policy, role, returns, n, params)                      \
  static NCCLSHIM_RETURNS(returns) unavailable_##name NCCLSHIM_PP_PARAMS(n, params) {      \
    ncs_dropin_message_unread = 1;                                                         \
    NCCLSHIM_NCCL_RETURN_IF_VALUE(returns) loaded_table->name NCCLSHIM_PP_ARGS(n, params); \
  }
NCCLSHIM_NCCL_FUNCTIONS(UNAVAILABLE_)

static const char *last_error(ncclComm_t comm) {
  if (ncs_dropin_message_unread) {
    ncs_dropin_message_unread = 0;
    return ncclshim_last_error();
  }
  return loaded_table->ncclGetLastError(comm);
}

static void build_forwarding(const ncclshim_nccl *nccl) {
  loaded_table = ncclshim_nccl_functions(nccl);
#define FORWARDING_(name, version, policy, role, returns, n, params)                          \
  forwarding.name = ncclshim_nccl_has_function(nccl, NCCLSHIM_FN_##name) ? loaded_table->name \
                                                                         : unavailable_##name;
  NCCLSHIM_NCCL_FUNCTIONS(FORWARDING_)
#undef FORWARDING_
  forwarding.ncclGetLastError = last_error;
  ncs_dropin_checks(&forwarding, loaded_table);
}

static void load(void) {
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  const ncclshim_nccl_table *table = &absent_table;
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK) {
    snprintf(absent_summary, sizeof(absent_summary), "ncclshim drop-in: no usable NCCL (%s)",
             ncclshim_nccl_message(nccl));
    ncs_rec_no_nccl();
  } else {
    build_forwarding(nccl);
    table = &forwarding;
    ncs_dropin_report(nccl);
    if (ncs_rec_attach(ncclshim_nccl_version_code(nccl))) table = ncs_rec_table(table);
    if (ncs_debug_enabled()) {
      char text[PATH_MAX + 256];
      ncs_rec_describe(text, sizeof(text));
      ncs_rec_say("", text, "", 0); /* the directory's control characters escaped */
    }
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

#define EXPORT_(name, version, policy, role, returns, n, params)                              \
  EXPORT NCCLSHIM_RETURNS(returns)                                                            \
  name NCCLSHIM_PP_PARAMS(n, params) {                                                        \
    NCCLSHIM_NCCL_RETURN_IF_VALUE(returns) current_table()->name NCCLSHIM_PP_ARGS(n, params); \
  }                                                                                           \
  EXPORT NCCLSHIM_RETURNS(returns) p##name NCCLSHIM_PP_PARAMS(n, params)                      \
      __attribute__((alias(#name)));
NCCLSHIM_NCCL_FUNCTIONS(EXPORT_)
