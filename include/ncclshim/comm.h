/* ncclshim's communicator helpers: checked NCCL calls, communicators with a life cycle,
 * bounded waits and an abort that cannot hang its caller.
 *
 *   ncclshim_nccl_check(nccl, r, "ncclAllReduce")   an ncclResult_t -> status + message
 *   ncclshim_nccl_wait(nccl, comm, ms)              poll ncclCommGetAsyncError, bounded
 *   ncclshim_comm_init(...)                         blocking or non-blocking communicator
 *   ncclshim_comm_wait / _check / _group_end        finish non-blocking work, bounded
 *   ncclshim_comm_wait_stream(comm, cuda, s, ms)    a stream's work, or the comm's error
 *   ncclshim_comm_destroy / _abort / _free          tear down; abort on its own thread
 *
 * Every NCCL call goes through the table of the ncclshim_nccl handle given; where a function
 * takes an `ncclshim_nccl *`, NULL means the process-wide default (ncclshim_nccl_default()).
 * Failures return a status and leave a message for ncclshim_last_error() on the calling
 * thread. Nothing here aborts or exits the process, installs signal handlers, starts
 * threads except the abort helper's, registers atexit handlers or calls NCCL from a
 * destructor. Out-parameters are written only on success.
 *
 * Deadlines: every wait takes a timeout in milliseconds (0: look once, never block; a
 * negative value is refused: no wait is unbounded). A wait notices completion within about
 * max(2 us, 5 %) of the time it waited: it polls back to back (yielding the core between
 * polls) while a sleep would overshoot more than that (about the first 1.75 ms), then
 * sleeps 1/25 of the time waited, at most 1 ms, on CLOCK_MONOTONIC. NCCLSHIM_WAIT_SPIN_US=N
 * in the environment ends the back-to-back polling after N us (default 2000; 0: sleep from
 * the start: fewer cycles, later returns). NCCL calls that block by themselves (init, finalize and
 * collectives on a *blocking* communicator) cannot be bounded from outside: create the
 * communicator non-blocking to have every step bounded, or watch a blocking one with the
 * watchdog (ncclshim/watchdog.h, included below). */
#ifndef NCCLSHIM_COMM_H
#define NCCLSHIM_COMM_H

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Checked calls ------------------------------------------------------------------ */

/* Turn the result of the NCCL function named `call` into a status.
 *   ncclSuccess     OK, the thread's message untouched.
 *   ncclInProgress  OK as well: a non-blocking communicator accepted the work and finishes it
 *                   in the background; complete it with ncclshim_nccl_wait or
 *                   ncclshim_comm_wait (or use ncclshim_comm_check, which does both).
 *   anything else   NCCL_ERROR with the message
 *                   "ncclAllReduce failed: ncclInvalidArgument (4): <ncclGetErrorString>;
 *                    NCCL's last error: <ncclGetLastError>"
 *                   The last-error part appears only when the loaded NCCL has
 *                   ncclGetLastError (2.13+) and it says something. A code no release has
 *                   used reads "unknown result code N". Without a loaded NCCL, ncclshim's
 *                   copy of NCCL's texts is used.
 * The failing code is also kept as the thread's ncclshim_last_nccl_result (ncclshim.h).
 * nccl: NULL for the default handle. call: NULL reads "NCCL call". Thread-safe (NCCL's last
 * error is one global string: with several threads failing at once it may be another's). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_check(ncclshim_nccl *nccl, ncclResult_t result,
                                                 const char *call);

/* ---- Bounded waits on any ncclComm_t -------------------------------------------------- */

/* Poll ncclCommGetAsyncError(comm) with backoff until it reports ncclSuccess (OK), another
 * result (NCCL_ERROR, the message names it as "asynchronous error"), or timeout_ms ran out
 * while it still said ncclInProgress (TIMEOUT, "... still in progress after N ms").
 * ncclInProgress is never an error. Use it after init, group end, finalize or a collective
 * on a non-blocking communicator, and on the parent after ncclCommSplit.
 * Also: INVALID_ARGUMENT (comm NULL, timeout_ms < 0), NCCL_ERROR when
 * ncclCommGetAsyncError itself fails, and the handle's status when no NCCL is loaded.
 * The communicator is not changed: after an error or timeout it is the caller's choice to
 * abort (ncclshim_comm_abort, or ncclCommAbort). ncclCommGetAsyncError may be called while
 * another thread uses the communicator, so this may run on a watchdog thread. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_wait(ncclshim_nccl *nccl, ncclComm_t comm,
                                                int timeout_ms);

/* ---- Communicators -------------------------------------------------------------------- */

typedef struct ncclshim_comm ncclshim_comm;

/* Where a communicator is in its life. Stable values. */
typedef enum ncclshim_comm_state {
  NCCLSHIM_COMM_INITIALIZING = 0, /* non-blocking init started; ncclshim_comm_wait finishes it */
  NCCLSHIM_COMM_READY = 1,        /* usable: ncclshim_comm_raw gives the ncclComm_t */
  NCCLSHIM_COMM_FINALIZING = 2,   /* ncclshim_comm_destroy ran out of time while finalizing */
  NCCLSHIM_COMM_FAILED = 3,       /* NCCL reported an error, or the watchdog found a hang (it
                                     then started the abort): only an abort releases it */
  NCCLSHIM_COMM_DESTROYED = 4,    /* finalized and destroyed */
  NCCLSHIM_COMM_ABORTING = 5,     /* ncclCommAbort is still running on its thread */
  NCCLSHIM_COMM_ABORTED = 6       /* ncclCommAbort returned */
} ncclshim_comm_state;

/* "initializing", "ready", ...; "unknown" for other values. */
NCCLSHIM_API const char *ncclshim_comm_state_name(ncclshim_comm_state state);

/* ncclshim_comm_options.blocking. Stable values. */
enum {
  NCCLSHIM_COMM_NONBLOCKING = 0,
  NCCLSHIM_COMM_BLOCKING = 1,
  /* Bounded init, blocking operations (needs ncclCommSplit, NCCL 2.18.1+). The init is
   * non-blocking; once ncclshim_comm_wait has seen it finish, the same wait splits it
   * (ncclCommSplit, color 0, key rank, bounded by the same deadline) into a child whose
   * config is blocking, and ncclshim_comm_raw gives the child. Collectives then cost what
   * they cost on a blocking communicator (NCCL's non-blocking mode adds tens of us per call)
   * and the watchdog (ncclshim/watchdog.h) bounds them instead. Teardown: destroy finalizes
   * and destroys the child (its finalize blocks, as on any blocking communicator; where
   * NCCL_COMM_BLOCKING=0 made it non-blocking, it is waited for within the deadline like the
   * parent's), then the parent within the deadline; abort aborts both. */
  NCCLSHIM_COMM_SPLIT_BLOCKING = 2
};

typedef struct ncclshim_comm_options {
  size_t size;  /* sizeof(ncclshim_comm_options): lets the struct grow */
  int blocking; /* NCCLSHIM_COMM_BLOCKING (any value but 0 and 2): NCCL calls on it block
                   until done (NCCL's default). NCCLSHIM_COMM_NONBLOCKING (needs NCCL 2.14+):
                   init and operations return at once and finish in the background, so that
                   every wait can have a deadline. NCCLSHIM_COMM_SPLIT_BLOCKING: above. */
} ncclshim_comm_options;
#define NCCLSHIM_COMM_OPTIONS_INIT \
  { sizeof(ncclshim_comm_options), NCCLSHIM_COMM_BLOCKING }

/* Create rank `rank` of an `nranks`-rank communicator with the unique id every rank got
 * (from ncclGetUniqueId on one rank, or on each rank when NCCL_COMM_ID is set). It runs on
 * the calling thread's current CUDA device. options: NULL for NCCLSHIM_COMM_OPTIONS_INIT.
 * The config goes through ncclshim_nccl_config_init, with `blocking` set explicitly;
 * ncclCommInitRankConfig is used where the NCCL has it (2.14+), else ncclCommInitRank.
 * Blocking: returns when every rank has joined (NCCL waits without a bound).
 * Non-blocking: returns at once with the communicator INITIALIZING; call
 * ncclshim_comm_wait(comm, deadline) before using it. NCCL_COMM_BLOCKING in the environment
 * may turn a blocking request non-blocking; the communicator handles either.
 * Returns OK with *out set; INVALID_ARGUMENT (out or id NULL, nranks < 1, rank outside
 * [0, nranks), options->size too small); UNAVAILABLE (non-blocking on an NCCL older than
 * 2.14, NCCLSHIM_COMM_SPLIT_BLOCKING without ncclCommSplit: the message names both
 * versions); the handle's status when no NCCL is loaded;
 * OUT_OF_MEMORY; NCCL_ERROR (init failed: checked message). Thread-safe. */
NCCLSHIM_API ncclshim_status ncclshim_comm_init(ncclshim_nccl *nccl, int nranks,
                                                const ncclUniqueId *id, int rank,
                                                const ncclshim_comm_options *options,
                                                ncclshim_comm **out);

/* The state (NULL: DESTROYED). Safe from any thread. */
NCCLSHIM_API ncclshim_comm_state ncclshim_comm_state_of(const ncclshim_comm *comm);
/* The ncclComm_t for NCCL calls while the communicator is READY; NULL in every other state
 * (NCCL refuses a NULL communicator with ncclInvalidArgument, so a stale use fails cleanly). */
NCCLSHIM_API ncclComm_t ncclshim_comm_raw(const ncclshim_comm *comm);
/* The NCCL handle it was made with (never NULL for a valid comm; NULL for NULL). */
NCCLSHIM_API ncclshim_nccl *ncclshim_comm_library(const ncclshim_comm *comm);
/* Its rank and size as given to ncclshim_comm_init; -1 for NULL. */
NCCLSHIM_API int ncclshim_comm_rank(const ncclshim_comm *comm);
NCCLSHIM_API int ncclshim_comm_size(const ncclshim_comm *comm);

/* Calls on one ncclshim_comm are not thread-safe with each other (NCCL's own rule for a
 * communicator), except ncclshim_comm_state_of and the accessors above. Each of the following
 * returns INVALID_ARGUMENT for timeout_ms < 0. What each returns in each state is one table,
 * docs/reference.md "Calls by communicator state", which the test comm-states walks. */

/* Finish what the communicator has in flight (a non-blocking init, operations, finalize)
 * with ncclshim_nccl_wait. OK: done, and an INITIALIZING communicator becomes READY.
 * NCCL_ERROR: an asynchronous error; the communicator becomes FAILED (abort it). TIMEOUT:
 * still in progress; nothing changes, so the caller can wait again or abort.
 * INVALID_ARGUMENT for NULL and for a destroyed, aborting or aborted communicator. A FAILED
 * one answers at once with its failure: NCCL_ERROR naming the first error, or, when the
 * watchdog failed it, the watchdog's status (TIMEOUT: an operation ran past its deadline;
 * CUDA_ERROR: the driver could not say whether one completed, cuEventQuery failed; waiting
 * again does not help: abort it). The same holds for ncclshim_comm_check,
 * _group_end and _wait_stream (docs/reference.md, "Calls by communicator state"). */
NCCLSHIM_API ncclshim_status ncclshim_comm_wait(ncclshim_comm *comm, int timeout_ms);

/* Check the result of an NCCL call made on this communicator, and finish it: ncclSuccess is
 * OK at once; ncclInProgress waits as ncclshim_comm_wait(comm, timeout_ms) does; any other
 * result is NCCL_ERROR with ncclshim_nccl_check's message (the wrapper's state stays as it
 * is: an argument error does not break a blocking communicator; a non-blocking one, NCCL
 * also records as its asynchronous error, which the next wait reports). Use it for
 * collectives, and for ncclGroupEnd on one communicator. */
NCCLSHIM_API ncclshim_status ncclshim_comm_check(ncclshim_comm *comm, ncclResult_t result,
                                                 const char *call, int timeout_ms);

/* ncclGroupEnd, then, when NCCL answers ncclInProgress, wait on each of the `count`
 * communicators that took part (all sharing one deadline). OK, NCCL_ERROR (ncclGroupEnd
 * failed, or a communicator reported an error: that one becomes FAILED), TIMEOUT.
 * INVALID_ARGUMENT (count < 0, comms NULL with count > 0, a NULL entry, timeout_ms < 0) is
 * answered before ncclGroupEnd runs: the group stays open, call again with valid arguments.
 * Once ncclGroupEnd has returned, each communicator answers as for ncclshim_comm_wait, also
 * when NCCL finished at once: a FAILED one its failure, a destroyed, aborting or aborted one
 * INVALID_ARGUMENT.
 * Registrations queued in the group (ncclshim_symmem_alloc_in_group) are complete after an
 * OK here; finish them with ncclshim_symmem_complete. nccl: NULL for the default handle;
 * comms may be NULL when count is 0. */
NCCLSHIM_API ncclshim_status ncclshim_comm_group_end(ncclshim_nccl *nccl,
                                                     ncclshim_comm *const *comms, int count,
                                                     int timeout_ms);

/* Wait until the work queued on `stream` has finished, watching the communicator meanwhile:
 * polls cuStreamQuery and ncclCommGetAsyncError with backoff. OK: the stream is idle.
 * NCCL_ERROR: the communicator reported an error (it becomes FAILED; a peer that died shows
 * up here instead of as a hang). CUDA_ERROR (and the CUDA helpers' other statuses): the
 * stream query failed. TIMEOUT: the work is still running. cuda: NULL for
 * ncclshim_cuda_default(). The stream's context must be current on the calling thread. */
NCCLSHIM_API ncclshim_status ncclshim_comm_wait_stream(ncclshim_comm *comm,
                                                       const ncclshim_cuda *cuda, CUstream stream,
                                                       int timeout_ms);

/* Tear down in order, collectively (every rank must call it): ncclCommFinalize (2.14+), a
 * bounded wait for it, then ncclCommDestroy. An INITIALIZING communicator is first waited
 * for. OK: DESTROYED. TIMEOUT: finalize is still running; the communicator is FINALIZING
 * and a later destroy goes on waiting (or abort it). NCCL_ERROR: a step failed; the
 * communicator is FAILED. A FAILED communicator is refused with NCCL_ERROR, also when the
 * watchdog failed it for a deadline (only an abort can release it), and so is one being
 * aborted (INVALID_ARGUMENT). NULL, DESTROYED and ABORTED
 * are OK at once without an NCCL call, so destroy is idempotent. On a blocking communicator
 * finalize itself blocks without a bound. The wrapper stays valid: ncclshim_comm_free. */
NCCLSHIM_API ncclshim_status ncclshim_comm_destroy(ncclshim_comm *comm, int timeout_ms);

/* Abort: ncclCommAbort on a thread of its own, and wait for it at most timeout_ms. OK:
 * ABORTED (or ncclCommAbort's own error as NCCL_ERROR; the communicator is gone either way).
 * TIMEOUT: "ncclCommAbort timed out after N ms": NCCL's abort itself hangs (it can, see
 * docs/collectives.md); the thread is left running, the communicator is ABORTING, and
 * calling abort again waits for that same thread. A thread that cannot be started gives
 * OUT_OF_MEMORY and leaves the state unchanged. NULL, ABORTED and DESTROYED are OK without
 * an NCCL call, so abort is idempotent. It may follow any failed step, in any state. Abort
 * is local: no other rank needs to take part, though peers may then see errors. */
NCCLSHIM_API ncclshim_status ncclshim_comm_abort(ncclshim_comm *comm, int timeout_ms);

/* Release the wrapper. It makes no NCCL call: a communicator neither destroyed nor aborted is
 * left to NCCL as it is (what a process about to exit wants: no collective teardown, no
 * risk of a hang; NCCL's resources go with the process). An abort still running keeps what
 * it needs and releases it when ncclCommAbort returns. Symmetric buffers made on the
 * communicator keep it alive until they are freed. NULL is ignored. */
NCCLSHIM_API void ncclshim_comm_free(ncclshim_comm *comm);

#ifdef __cplusplus
}
#endif

#include "ncclshim/watchdog.h"
#include "ncclshim/comm_query.h" /* per-communicator capabilities, agreement */

#endif /* NCCLSHIM_COMM_H */
