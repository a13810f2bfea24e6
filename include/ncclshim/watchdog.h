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
 * The enqueueing thread marks each operation with a CUDA event after it, from a pool made
 * when the communicator is watched (no allocation). Every interval the thread queries the
 * events of outstanding operations (cuEventQuery) and the communicator's
 * ncclCommGetAsyncError. When the oldest operation not known to be complete has run longer
 * than its timeout, or NCCL reports an error, the watchdog
 *   - marks the communicator FAILED, with a message naming the operation: function, count,
 *     type, sequence number and how long it had run; for a graph replay its label and how
 *     many collectives it holds (ncclshim_comm_failure);
 *   - starts ncclCommAbort on a thread of its own (as ncclshim_comm_abort does: an abort that
 *     hangs cannot hang the watchdog); ncclshim_comm_abort later waits for that same thread;
 *   - calls the options' on_failure callback, if any, on the watchdog thread.
 * From then on ncclshim_comm_raw answers NULL (an NCCL call made with it fails at once with
 * ncclInvalidArgument), and every checked call on the communicator (ncclshim_comm_record,
 * _check, _wait, _wait_stream, _group_end) returns the failure without blocking: TIMEOUT
 * for an operation past its deadline, NCCL_ERROR for an error NCCL reported.
 *
 * The cost of a record (docs/collectives.md, "What a record costs"). One event covers every
 * operation before it on its stream, so a record skips cuEventRecord, and calls no driver
 * function at all, while the stream's newest event is still pending and the watchdog has not
 * closed the group of operations waiting for an event: those operations share the next
 * event. Only the first of a group reads the clock; the watchdog's pass closes a group that
 * spans 1/20 of the timeout less one interval (at once when the interval is longer). The
 * event is recorded by the next record that finds no event pending or the group closed;
 * for the last operations of a burst, which no record follows, by the watchdog
 * itself at its next pass after their stream's events fired (a "catch-up": it asks
 * cuStreamIsCapturing first and never records into a capturing stream). Limits:
 *   - the deadline of operations that share an event counts from the first of them, so a
 *     hang is reported early for the one that hung by at most the span of its group: below
 *     1/20 of the timeout or one interval, whichever is longer, plus how late the pass that
 *     closes the group runs; never later than timeout + interval after it;
 *   - a catch-up event also waits for work queued on the stream after those operations
 *     until the watchdog's pass: their clock covers that work too;
 *   - the stream given to a record must stay valid until the operations recorded on it are
 *     complete (or the communicator is unwatched): a catch-up records on it; on the
 *     per-thread default stream (CU_STREAM_PER_THREAD, which names another stream on the
 *     watchdog's thread) every record records its event;
 *   - a capture begun on that stream in the instant between the watchdog's check and its
 *     catch-up can take the catch-up event; such an event adds no node to the graph and its
 *     capture answer only makes the watchdog try again.
 *
 * CUDA graphs. The watchdog's thread calls every driver function in thread-local capture
 * mode (cuThreadExchangeStreamCaptureMode, set once when the thread starts; drivers older
 * than 10.1 have no capture modes), so that its queries cannot invalidate a capture made in
 * global mode by another thread, and a capture-related answer (CUDA_ERROR_STREAM_CAPTURE_*,
 * CUDA_ERROR_CAPTURED_EVENT) never fails a communicator: it restarts that operation's
 * clock. A record that would record an event first asks cuStreamIsCapturing: on a capturing
 * stream it records no event, starts no clock, returns OK and counts the operation as
 * captured (ncclshim_comm_watch_counts); a record that skips the event asks no driver, and
 * if its stream was capturing, the watchdog finds so before its catch-up and holds those
 * operations' clock until the capture ends. A graph's collectives are watched when it is
 * launched: ncclshim_comm_record_graph after each cudaGraphLaunch records one event for the
 * replay, however long after its capture.
 *
 * What it cannot do: stop a blocking NCCL call that is itself stuck on the enqueueing thread
 * (NCCL's abort, which runs concurrently, is what releases it; NCCL allows ncclCommAbort
 * from another thread for this purpose). The clock of an operation starts when it is
 * recorded, so an operation queued behind long unrelated work on the same stream counts that
 * work too: choose the timeout accordingly. */
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
 * deadline of each operation recorded on it. Its pool of events is created here, in the
 * calling thread's current CUDA context, which the watchdog makes current on its own thread
 * to query them. OK; INVALID_ARGUMENT (NULL, timeout < 1, not READY, already watched);
 * the CUDA helpers' statuses when the events cannot be made. */
NCCLSHIM_API ncclshim_status ncclshim_comm_watch(ncclshim_comm *comm, ncclshim_watchdog *dog,
                                                 int timeout_ms);

/* Stop watching: the events are destroyed (those still pending are released by CUDA when
 * they complete), once no record and no pass of the watchdog uses them. NULL and a
 * communicator not watched are OK. ncclshim_comm_destroy and ncclshim_comm_abort unwatch by
 * themselves. Safe while another thread records on it (that record finishes; the next one
 * answers INVALID_ARGUMENT) and from the callback. */
NCCLSHIM_API ncclshim_status ncclshim_comm_unwatch(ncclshim_comm *comm);

/* Mark an operation just enqueued on `stream` with the communicator: notes `call` (kept as
 * a pointer: pass a string literal), `count`, `type` and the sequence number, and records
 * an event from the pool on the stream, or leaves the operation to share the next one (see
 * "The cost of a record" above; also when the pool is full: the oldest operations keep the
 * deadline). On a capturing stream: no event, no clock, OK, counted as captured.
 * OK; INVALID_ARGUMENT (NULL, not watched, or two threads recording on it at once); the
 * failure when the watchdog has failed the communicator (TIMEOUT or NCCL_ERROR, with its
 * message), at once; CUDA_ERROR when cuStreamIsCapturing or cuEventRecord fails (the
 * operations waiting for that event are then no longer watched). Calls on one communicator
 * (record, record_graph, watch_counts) come from one thread at a time. */
NCCLSHIM_API ncclshim_status ncclshim_comm_record(ncclshim_comm *comm, CUstream stream,
                                                  const char *call, size_t count,
                                                  ncclDataType_t type);

/* Longest graph label kept (longer ones are cut, ending in "..."). */
#define NCCLSHIM_WATCH_LABEL_MAX 63

/* Mark a replay of a CUDA graph just launched on `stream` (cudaGraphLaunch, cuGraphLaunch)
 * whose nodes hold `ops` collectives of this communicator: one event for the replay (the
 * operations still waiting for one on that stream get theirs first). `label` names the
 * graph in a failure message ("replay #7 of CUDA graph \"decode\" (2 collectives)", 7
 * being its sequence number among the communicator's records); it is copied, cut to
 * NCCLSHIM_WATCH_LABEL_MAX bytes; NULL reads "unnamed". The replay's clock starts here,
 * however long after the capture. On a capturing stream (a graph launched into a
 * capture becomes a node of it): no event, OK, counted as captured. OK; INVALID_ARGUMENT
 * (NULL comm, ops < 0, not watched, two threads at once); the failure, at once, when the
 * watchdog has failed the communicator; CUDA_ERROR when cuStreamIsCapturing or
 * cuEventRecord fails. */
NCCLSHIM_API ncclshim_status ncclshim_comm_record_graph(ncclshim_comm *comm, CUstream stream,
                                                        const char *label, int ops);

/* What the records of a watched communicator did, since it was watched. */
typedef struct ncclshim_watch_counts {
  size_t size;          /* sizeof(ncclshim_watch_counts), set by the caller: lets it grow */
  uint64_t recorded;    /* operations and replays recorded outside a capture */
  uint64_t captured;    /* operations and replays seen capturing (no event, no clock) */
  uint64_t replays;     /* ncclshim_comm_record_graph calls outside a capture */
  uint64_t events;      /* cuEventRecord calls that succeeded, the catch-ups included */
  uint64_t catch_ups;   /* events the watchdog recorded after the last operations of a burst */
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
