/* Hang detection without per-call waits: a watchdog thread over blocking communicators.
 *
 *   ncclshim_watchdog_start(&options, &dog)          one background thread (one per process
 *                                                     is enough: it watches any number)
 *   ncclshim_comm_watch(comm, dog, timeout_ms)       watch a READY communicator
 *   ncclAllReduce(..., ncclshim_comm_raw(comm), s)   enqueue as usual, then
 *   ncclshim_comm_record(comm, s, "ncclAllReduce", count, ncclFloat32)
 *                                                     mark the operation (a cuEventRecord)
 *   ncclshim_comm_unwatch(comm), ncclshim_watchdog_stop(dog)
 *
 * The enqueueing thread only records a CUDA event after each operation, from a pool made
 * when the communicator is watched (no allocation, one uncontended lock). Every interval the
 * thread queries the events of outstanding operations (cuEventQuery) and the communicator's
 * ncclCommGetAsyncError. When the oldest operation has run longer than its timeout, or NCCL
 * reports an error, the watchdog
 *   - marks the communicator FAILED, with a message naming the operation: function, count,
 *     type, sequence number and how long it had run (ncclshim_comm_failure);
 *   - starts ncclCommAbort on a thread of its own (as ncclshim_comm_abort does: an abort that
 *     hangs cannot hang the watchdog); ncclshim_comm_abort later waits for that same thread;
 *   - calls the options' on_failure callback, if any, on the watchdog thread.
 * From then on ncclshim_comm_raw answers NULL (an NCCL call made with it fails at once with
 * ncclInvalidArgument), and every checked call on the communicator (ncclshim_comm_record,
 * _check, _wait, _wait_stream, _group_end) returns the failure without blocking: TIMEOUT
 * for an operation past its deadline, NCCL_ERROR for an error NCCL reported.
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
 * It must not call ncclshim_watchdog_stop; anything else is allowed. */
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

/* Stop the thread, join it (it never blocks in NCCL, so this returns within about one
 * interval), unwatch every communicator still watched, and free the watchdog. Aborts it
 * started go on on their own threads. No thread may use the watchdog, or record on its
 * communicators, during or after the call. NULL is ignored. */
NCCLSHIM_API void ncclshim_watchdog_stop(ncclshim_watchdog *dog);

/* Watch `comm`, which must be READY and not watched already, with `timeout_ms` (>= 1) as the
 * deadline of each operation recorded on it. Its pool of events is created here, in the
 * calling thread's current CUDA context, which the watchdog makes current on its own thread
 * to query them. OK; INVALID_ARGUMENT (NULL, timeout < 1, not READY, already watched);
 * the CUDA helpers' statuses when the events cannot be made. */
NCCLSHIM_API ncclshim_status ncclshim_comm_watch(ncclshim_comm *comm, ncclshim_watchdog *dog,
                                                 int timeout_ms);

/* Stop watching: the events are destroyed (those still pending are released by CUDA when
 * they complete). NULL and a communicator not watched are OK. ncclshim_comm_destroy and
 * ncclshim_comm_abort unwatch by themselves. Not while another thread records on it. */
NCCLSHIM_API ncclshim_status ncclshim_comm_unwatch(ncclshim_comm *comm);

/* Mark an operation just enqueued on `stream` with the communicator: records an event from
 * the pool on the stream and notes `call` (kept as a pointer: pass a string literal),
 * `count`, `type` and the sequence number. When more operations are outstanding than the
 * pool holds, the newest event is recorded again (the oldest ones keep the deadline).
 * OK; INVALID_ARGUMENT (NULL, not watched); the failure when the watchdog has failed the
 * communicator (TIMEOUT or NCCL_ERROR, with its message), at once; CUDA_ERROR when
 * cuEventRecord fails. Calls on one communicator come from one thread at a time. */
NCCLSHIM_API ncclshim_status ncclshim_comm_record(ncclshim_comm *comm, CUstream stream,
                                                  const char *call, size_t count,
                                                  ncclDataType_t type);

/* The message the watchdog left when it failed the communicator; "" when it has not (and
 * for NULL). Valid as long as the communicator. Safe from any thread. */
NCCLSHIM_API const char *ncclshim_comm_failure(const ncclshim_comm *comm);

/* "ncclFloat32" for 7, ...; "unknown type" for values no release has. */
NCCLSHIM_API const char *ncclshim_nccl_type_name(ncclDataType_t type);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_WATCHDOG_H */
