/* What the fake libnccl records, read by the tests through dlsym on the fake's handle. */
#ifndef NCCLSHIM_FAKE_NCCL_H
#define NCCLSHIM_FAKE_NCCL_H

#include <stddef.h>

enum { FAKE_MAX_ARGS = 12, FAKE_MAX_ARG_BYTES = 128 };

typedef struct fake_nccl_call {
  char function[64]; /* the fake entry point that ran */
  int nargs;
  size_t size[FAKE_MAX_ARGS]; /* sizeof each argument as the fake received it */
  unsigned char bytes[FAKE_MAX_ARGS][FAKE_MAX_ARG_BYTES]; /* and its bytes */
  int version_code;                                       /* which fake answered */
} fake_nccl_call;

/* Exported by every fake (resolve with dlsym); the last call is the calling thread's: */
typedef const fake_nccl_call *(*fake_nccl_last_call_fn)(void);
/* What RESULT functions return next; int functions (the device API's ncclTeamRankToWorld,
 * ...) return the same value, ncclTeam_t functions {result, result + 1, result + 2}. */
typedef void (*fake_nccl_set_result_fn)(int result);
typedef int (*fake_nccl_count_fn)(void); /* ncclGetVersion calls, or all calls */

/* Behaviour, for the communicator tests; all of it off until fake_nccl_set_live(1) and after
 * fake_nccl_reset(), except injections and the call counts, which work in either mode.
 *   fake_nccl_reset()                 everything below back to off / zero (blocks still
 *                                     allocated are forgotten, not freed)
 *   fake_nccl_set_live(on)            InitRank(Config) hand out a communicator (non-blocking
 *                                     when the config says blocking = 0: init, finalize and
 *                                     registrations then answer ncclInProgress and finish at
 *                                     the next successful ncclCommGetAsyncError); MemAlloc /
 *                                     MemFree allocate 4096-aligned host memory; window
 *                                     registration fills the window at once, at the end of the
 *                                     outermost group, or when a non-blocking comm finishes;
 *                                     ncclCommSplit writes a child at once, blocking as its
 *                                     config says, and answers as the parent's mode does
 *   fake_nccl_set_async(n, final)     ncclCommGetAsyncError: ncclInProgress n more times
 *                                     (n < 0: forever), then `final` on every later poll
 *   fake_nccl_set_abort_hang(on)      ncclCommAbort blocks while on (another thread may turn
 *                                     it off); fake_nccl_abort_returns() counts the returns
 *   fake_nccl_wait_abort_returns(n, ms) waits (a condition, not a sleep) until n returns
 *                                     or ms pass; answers the count
 *   fake_nccl_set_peer_lost(n, loss) ncclCommGetAsyncError: ncclSuccess n more times (a
 *                                     collective running), then `loss` on every later poll (a
 *                                     peer that died); takes precedence over set_async
 *   fake_nccl_set_abort_delay(ms)     ncclCommAbort takes ms before it returns (then hangs
 *                                     as well if set_abort_hang is on)
 *   fake_nccl_set_null_window(on)     ncclCommWindowRegister succeeds and leaves *win as is
 *   fake_nccl_set_last_error(text)    what ncclGetLastError returns ("" for the default)
 *   fake_nccl_set_gather_edit(r, a, b) from now on ncclAllGather copies the send buffer
 *                                     into every rank's slot (host memory), then replaces
 *                                     text a by b in rank r's slot (r < 0: none), as if r
 *                                     sent that
 *   fake_nccl_set_properties(d, m, g) ncclCommQueryProperties answers deviceApiSupport d,
 *                                     multimemSupport m, ginType g (ncclInvalidUsage for a
 *                                     struct without NCCL_API_MAGIC or newer than the fake)
 *   fake_nccl_inject(fn, result, n)   the next n calls of fn (n < 0: all) return result and do
 *                                     nothing else
 *   fake_nccl_count(fn)               calls of fn since the reset; -1 for an unknown name
 *   fake_nccl_last_seq(fn)            when fn was last called (a global counter), 0 if never
 *   fake_nccl_live_allocations()      ncclMemAlloc blocks not yet freed
 *   fake_nccl_live_windows()          windows filled in and not yet deregistered */
/* The struct the last ...Config collective received (live mode), as fake_nccl_last_coll_config
 * returns it: `calls` 1 once one ran, `given` 1 when its config was not NULL; size, magic and
 * version as they arrived (a struct without NCCL_API_MAGIC, shorter than its header or newer
 * than the fake was refused with ncclInvalidArgument), then the fields read (a copy of the
 * algSelection string). fake_nccl_last_encryption: the same for ncclSetEncryption. */
typedef struct fake_nccl_coll_config {
  int calls, given;
  size_t size;
  unsigned magic, version;
  char alg[64];
  int max_ctas;
  unsigned long long tag;
  void *event;
} fake_nccl_coll_config;
typedef struct fake_nccl_encryption {
  size_t size;
  unsigned magic, version;
  int mode;
  char psk[64];
} fake_nccl_encryption;
typedef const fake_nccl_coll_config *(*fake_nccl_coll_config_fn)(void);
typedef const fake_nccl_encryption *(*fake_nccl_encryption_fn)(void);

typedef void (*fake_nccl_void_fn)(void);
typedef void (*fake_nccl_int_fn)(int value);
typedef void (*fake_nccl_async_fn)(int in_progress_polls, int final_result);
typedef void (*fake_nccl_text_fn)(const char *text);
typedef void (*fake_nccl_inject_fn)(const char *function, int result, int times);
typedef int (*fake_nccl_named_count_fn)(const char *function);
typedef int (*fake_nccl_wait_fn)(int count, int timeout_ms);
typedef void (*fake_nccl_edit_fn)(int rank, const char *from, const char *to);
typedef void (*fake_nccl_properties_fn)(int device_api, int multimem, int gin_type);

#endif
