/* Hang detection without per-call waits: a watchdog thread over blocking communicators.
 *
 *   ncclshim_watchdog_start(&options, &dog)          one background thread (one per process
 *                                                     is enough: it watches any number)
 *   ncclshim_comm_watch(comm, dog, timeout_ms)       watch a READY communicator
 *   ncclAllReduce(..., ncclshim_comm_raw(comm), s)   enqueue as usual, then
 *   ncclshim_comm_record(comm, s, "ncclAllReduce", count, ncclFloat32)
 *                                                     mark the operation
 *   cudaGraphLaunch(graph, s)                        a CUDA graph holding collectives, then
 *   ncclshim_comm_record_graph(comm, s, "decode", 2) mark the replay
 *   ncclshim_comm_unwatch(comm), ncclshim_watchdog_stop(dog)
 *
 * Each record records a CUDA event on the stream there and then, on the calling thread: no
 * thread of ncclshim's names the stream after the record returns, so the program may
 * synchronize and destroy it as soon as its work is done (a driver call naming a destroyed
 * stream crashes the process, and the next stream created gets the same handle). The
 * operations one thread records on one stream between two looks of the watchdog share one
 * event, recorded again by each (it then stands for the last; a hang among them is reported
 * as the first "or one of the N after it"): recording the same event again costs what
 * cuEventRecord alone costs, an event per operation up to 280 ns more. The event is made in
 * the stream's own context (several devices from one thread work); events are pooled per
 * context and reused once they fired; the pools grow as needed (one event per stream and
 * thread for each interval within one deadline and one interval). docs/collectives.md,
 * "The tracker of GPU progress", says the whole contract.
 *
 * Every interval the thread queries the events of outstanding operations (cuEventQuery, on
 * events ncclshim made, and nothing else of the driver but cuCtxSetCurrent and
 * cuEventDestroy) and the communicator's ncclCommGetAsyncError. When the oldest operation
 * not known to be complete has run longer than its timeout, when NCCL reports an error, or
 * when a query fails, the watchdog
 *   - marks the communicator FAILED, with a message naming the operation: function, count,
 *     type, the communicator's own sequence number and how long it had run; for a graph
 *     replay its label and how many collectives it holds (ncclshim_comm_failure);
 *   - starts ncclCommAbort on a thread of its own (as ncclshim_comm_abort does: an abort that
 *     hangs cannot hang the watchdog); ncclshim_comm_abort later waits for that same thread;
 *   - calls the options' on_failure callback, if any, on the watchdog thread.
 * From then on ncclshim_comm_raw answers NULL (an NCCL call made with it fails at once with
 * ncclInvalidArgument), and every checked call on the communicator (ncclshim_comm_record,
 * _check, _wait, _wait_stream, _group_end) returns the failure without blocking: TIMEOUT
 * for an operation past its deadline, NCCL_ERROR for an error NCCL reported, CUDA_ERROR when
 * cuEventQuery failed (the driver can no longer say whether that work completed).
 * docs/reference.md, "Watchdog calls", lists what each call here returns.
 *
 * No stalls: no lock is held across a driver call, and the thread never waits for a record
 * in progress. A record blocked in the driver (a full push buffer) delays neither another
 * communicator's deadline nor ncclshim_watchdog_stop; its own operation keeps its clock.
 *
 * CUDA graphs. The watchdog's thread calls every driver function in thread-local capture
 * mode (cuThreadExchangeStreamCaptureMode, set once when the thread starts; drivers older
 * than 10.1 have no capture modes), so that its queries cannot invalidate a capture made in
 * global mode by another thread. Every record first asks cuStreamIsCapturing: on a
 * capturing stream it records no event, starts no clock, returns OK and counts the
 * operation as captured (ncclshim_comm_watch_counts). A capture begun on the stream in the
 * instant between that check and the record takes the event; its query's capture answer
 * (CUDA_ERROR_STREAM_CAPTURE_*, CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_INVALID_VALUE) never
 * fails the communicator: that operation is counted as captured. A graph's collectives are
 * watched when it is launched: ncclshim_comm_record_graph after each cudaGraphLaunch records
 * one event for the replay, however long after its capture.
 *
 * What it cannot do: stop a blocking NCCL call that is itself stuck on the enqueueing thread
 * (NCCL's abort, which runs concurrently, is what releases it; NCCL allows ncclCommAbort
 * from another thread for this purpose). The clock of an operation starts when the
 * watchdog's first look after its record sees it (at most one interval later: a record
 * reads no clock), so an operation queued behind long unrelated work on the same stream
 * counts that work too: choose the timeout accordingly. The next look is aimed at the
 * oldest pending operation's deadline: a hang is reported no earlier than the deadline after
 * the record, and at most one interval after it. */
#ifndef NCCLSHIM_WATCHDOG_H
#define NCCLSHIM_WATCHDOG_H

#include "ncclshim/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclshim_watchdog ncclshim_watchdog;

/* Called on the watchdog thread, once per communicator it fails, after the abort has been
 * started. `message` is valid during the call only (ncclshim_comm_failure keeps a copy).
 * Anything is allowed but ncclshim_watchdog_stop of this watchdog (which refuses): aborting,
 * destroying or unwatching this or any communicator, even while another thread records on
 * it (what that thread holds is freed when it is done). It runs in thread-local capture
 * mode. */
typedef void (*ncclshim_watchdog_callback)(ncclshim_comm *comm, ncclshim_status status,
                                           const char *message, void *user);

typedef struct ncclshim_watchdog_options {
  size_t size;               /* sizeof(ncclshim_watchdog_options): lets the struct grow */
  int interval_ms;           /* how often the thread looks, 1 .. 60000 */
  const ncclshim_cuda *cuda; /* the driver for events; NULL: ncclshim_cuda_default() */
  ncclshim_watchdog_callback on_failure; /* NULL: none */
  void *user;                            /* passed to on_failure */
} ncclshim_watchdog_options;
#define NCCLSHIM_WATCHDOG_OPTIONS_INIT \
  { sizeof(ncclshim_watchdog_options), 10, NULL, NULL, NULL }

/* Start the thread. OK with *out set; INVALID_ARGUMENT (out NULL, options->size too small,
 * interval outside 1 .. 60000 ms); OUT_OF_MEMORY (no memory, or no thread). options: NULL
 * for the defaults. Thread-safe. */
NCCLSHIM_API ncclshim_status ncclshim_watchdog_start(const ncclshim_watchdog_options *options,
                                                     ncclshim_watchdog **out);

/* Stop the thread, join it (it never blocks in NCCL, nor waits for a record in progress, so
 * this returns within about one interval), unwatch every communicator still watched, and
 * free the watchdog. Aborts it started go on on their own threads. No thread may use the
 * watchdog during or after the call; a record in progress on one of its communicators
 * finishes safely, later ones answer INVALID_ARGUMENT (not watched). OK (NULL: OK, nothing
 * done); INVALID_ARGUMENT, and nothing stopped, when called on the watchdog's own thread
 * (from the callback). */
NCCLSHIM_API ncclshim_status ncclshim_watchdog_stop(ncclshim_watchdog *dog);

/* Watch `comm`, which must be READY and not watched already, with `timeout_ms` (>= 1) as the
 * deadline of each operation recorded on it. No event is made here: each record makes or
 * reuses one in its stream's context. OK; INVALID_ARGUMENT (NULL, timeout < 1, not READY,
 * already watched); OUT_OF_MEMORY; with no usable CUDA driver, the driver handle's status
 * (ncclshim_cuda_status). */
NCCLSHIM_API ncclshim_status ncclshim_comm_watch(ncclshim_comm *comm, ncclshim_watchdog *dog,
                                                 int timeout_ms);

/* Stop watching: the events are destroyed (those still pending are released by CUDA when
 * they complete), once no record and no pass of the watchdog uses them. OK always. NULL and a
 * communicator not watched are OK. ncclshim_comm_destroy and ncclshim_comm_abort unwatch by
 * themselves. Safe while another thread records on it (that record finishes; the next one
 * is refused, not watched) and from the callback. */
NCCLSHIM_API ncclshim_status ncclshim_comm_unwatch(ncclshim_comm *comm);

/* Mark an operation just enqueued on `stream` with the communicator: notes `call` (kept as
 * a pointer: pass a string literal), `count`, `type` and the sequence number, and records
 * an event on the stream, now, on this thread (nothing is recorded on it later: the stream
 * may be destroyed once its work is done). Its cost: one cuEventRecord,
 * one cuStreamIsCapturing and a short lock. On a capturing stream: no event, no clock, OK,
 * counted as captured. "Enqueued" means on the stream: a call that answered
 * ncclInProgress (a non-blocking communicator) is enqueued by NCCL's own thread later, so
 * record it once ncclshim_comm_check has finished it; an event recorded before the work
 * would complete at once and hide its hang.
 * OK; INVALID_ARGUMENT (NULL, not watched, or two threads recording on it at once); the
 * failure when the watchdog has failed the communicator (TIMEOUT, NCCL_ERROR or CUDA_ERROR,
 * with its message), at once; CUDA_ERROR when the operation cannot be watched because a
 * driver call failed (cuStreamIsCapturing, cuStreamGetCtx, cuCtxGetCurrent,
 * cuCtxSetCurrent, cuEventCreate or cuEventRecord: the message names it and the operation,
 * "... is not watched"); OUT_OF_MEMORY when no memory was left for it. Calls on one
 * communicator (record, record_graph, watch_counts) come from one thread at a time. */
NCCLSHIM_API ncclshim_status ncclshim_comm_record(ncclshim_comm *comm, CUstream stream,
                                                  const char *call, size_t count,
                                                  ncclDataType_t type);

/* Longest graph label kept, in bytes (a longer one is cut on a UTF-8 character boundary,
 * ending in "..."; a failure message prints it with quotes, backslashes and control
 * characters escaped). */
#define NCCLSHIM_WATCH_LABEL_MAX 63

/* Mark a replay of a CUDA graph just launched on `stream` (cudaGraphLaunch, cuGraphLaunch)
 * whose nodes hold `ops` collectives of this communicator: one event for the replay,
 * recorded as ncclshim_comm_record records. `label` names the graph in a failure message
 * ("replay #7 of CUDA graph \"decode\" (2 collectives)", 7 being its sequence number among
 * the communicator's records); it is copied, cut as NCCLSHIM_WATCH_LABEL_MAX says; NULL
 * reads "unnamed". The replay's clock starts here, however long after the capture. On a
 * capturing stream (a graph launched into a capture becomes a node of it): no event, OK,
 * counted as captured. OK; INVALID_ARGUMENT (NULL comm, ops < 0, not watched, two threads
 * at once); the failure, at once, when the watchdog has failed the communicator (TIMEOUT,
 * NCCL_ERROR or CUDA_ERROR); CUDA_ERROR and OUT_OF_MEMORY as ncclshim_comm_record. */
NCCLSHIM_API ncclshim_status ncclshim_comm_record_graph(ncclshim_comm *comm, CUstream stream,
                                                        const char *label, int ops);

/* What the records of a watched communicator did, since it was watched. */
typedef struct ncclshim_watch_counts {
  size_t size;          /* sizeof(ncclshim_watch_counts), set by the caller: lets it grow */
  uint64_t recorded;    /* operations and replays recorded outside a capture */
  uint64_t captured;    /* operations and replays seen capturing (no event, no clock) */
  uint64_t replays;     /* ncclshim_comm_record_graph calls outside a capture */
  uint64_t events;      /* cuEventRecord calls that succeeded: one per operation watched */
  uint64_t catch_ups;   /* always 0: nothing is recorded after a record returns (kept for
                           the layout) */
  uint64_t outstanding; /* operations not yet known to be complete, now */
} ncclshim_watch_counts;
#define NCCLSHIM_WATCH_COUNTS_INIT \
  { sizeof(ncclshim_watch_counts), 0, 0, 0, 0, 0, 0 }

/* The counts of a watched communicator into *out, whose size the caller set
 * (NCCLSHIM_WATCH_COUNTS_INIT); the fields that size holds are written. OK;
 * INVALID_ARGUMENT (NULL, out->size below this first version's, not watched, or a record in
 * progress on another thread). */
NCCLSHIM_API ncclshim_status ncclshim_comm_watch_counts(ncclshim_comm *comm,
                                                        ncclshim_watch_counts *out);

/* The message the watchdog left when it failed the communicator; "" when it has not (and
 * for NULL). Valid as long as the communicator. Safe from any thread. */
NCCLSHIM_API const char *ncclshim_comm_failure(const ncclshim_comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_WATCHDOG_H */
