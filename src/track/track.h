/* The tracker of GPU progress: "has operation N on stream S completed on the GPU?", for the
 * watchdog (src/comm/comm_watch*) and the drop-in's hang dump (src/dropin/record_hang*).
 *
 * The contract.
 *   - Every operation's event is recorded by ncs_track_record on the program's thread, inside
 *     the program's call (a record, a checked call, a collective through the drop-in).
 *     Nothing is recorded later: no thread of ours ever names a program's stream after the
 *     call returned, so a stream the program synchronizes and destroys is never touched again
 *     (a destroyed stream's handle crashes the driver, and the next stream created gets the
 *     same handle).
 *   - The sharing rule: the operations of one owner that one thread records on one stream
 *     between two looks share a node and its event, which each of them records again (so
 *     the event always stands for the last: when it has completed, so have all before it, in
 *     the stream's order). A look closes what it lists (the epoch moves on), so a query's
 *     answer stays true of every operation it covers. The price is precision: a pending
 *     event cannot tell which of its operations is not complete, and a report names the
 *     first and how many follow it. The gain: recording the same event again costs the
 *     driver what cuEventRecord alone costs, where an event per operation (hundreds of them
 *     in turn between two looks) cost 80-280 ns more on the GPU host, likely its objects no
 *     longer in the processor's caches (2,048 events recorded in turn with nothing else
 *     between cost no more than one). Replays (labelled) neither join nor are joined.
 *   - A record reads no clock: the look that closes a node to joins stamps it, with the time
 *     it took the lock to list the queue (so never before any of its records). A clock read
 *     costs about 30 ns on the GPU host, more than half of a record's budget.
 *   - The background thread (ncs_track_look) calls only cuEventQuery, cuCtxSetCurrent and
 *     cuEventDestroy, on events the tracker made; and few of them: each query holds the
 *     driver's lock that a record waits for, so it asks about a few events per stream and
 *     infers the rest from the stream's order (track_look.c says when that holds).
 *   - An event is made in the context of the stream it is recorded on. The context of each
 *     stream last seen is cached (CACHE rows); a record that the driver refuses with
 *     CUDA_ERROR_INVALID_HANDLE (the event is another context's) asks cuStreamGetCtx (the
 *     calling thread's current context for the legacy and per-thread streams), takes an
 *     event of that context, and records again.
 *   - Nothing is lost silently: when no event can be had, or a driver call fails, the record
 *     answers the failure (the caller tells the program), and a failed query is answered by
 *     the look that met it.
 *   - Pools grow on demand: one node per group not yet seen complete (allocated in blocks of
 *     NODE_BLOCK, kept for reuse until the tracker goes), one event per node, reused in its
 *     context (a record creates an event only when none of its context is free: in the first
 *     look's interval, or with more groups than ever before). What bounds them is how many
 *     groups are outstanding at once: at most one per stream, thread and owner for each look
 *     within one deadline plus one look (an older one has completed, or failed the
 *     communicator / fired the dump, after which nothing more is recorded).
 *   - A slow driver call delays only the call it is in: no lock is held across a driver
 *     call, and a look never waits for a record in progress: it takes that operation as
 *     the oldest not known complete, judged by its stamp.
 *
 * The lock and the node states. t->lock (a spin lock, a few steps at a time, never across a
 * driver call or an allocation) guards the queue, the done chain, the free lists, the pools,
 * the cache and the counts. A node's event, context and op belong to the recording thread
 * while RESERVED; its state is then published with a release store, after which the looking
 * thread reads the node and writes only its own line of it (its answers), until the look
 * moves it into the done chain, from which records take it again. The look writes nothing
 * that a record then reads or writes (the lines of a node, a free list): on the H200 host a
 * record that met such a line, written by the looking thread on another core, paid 100 to
 * 300 ns more.
 *
 *      ncs_track_record (program's thread)  |  ncs_track_look (the one looking thread)
 *
 *   spares/done/blank ─lock: take, append─▶ RESERVED ─cuEventRecord 0─▶ RECORDED
 *        │                                     ▲ lock: join (same epoch,  │
 *        │                                     └─ thread, owner, stream) ─┤ (a refused record:
 *        │                                                                │ RECORDED as it was)
 *        ▲                                     │                          │ cuEventQuery:
 *        │                      record failed  │    600: oldest pending ◀─┤ (stays)
 *        │                      (event dropped)▼    0, error, capture:    ▼ (error/capture:
 *        │                                  FAILED        answered (the look's line;
 *        │                                     │          event dropped on error/capture)
 *        │                                     ▼                          ▼
 *        └── done chain ◀── lock: at the queue's head, as it is (no write to the node) ──┘
 *            (a record taking a node of another context moves it to that context's spares)
 *
 * A look meeting a RESERVED node stops there and takes it as the oldest pending (judged by
 * its stamp), without waiting for it; a node of the current epoch (taken after the look
 * listed the queue, open to joins) is neither queried nor judged before the next look. An
 * event the driver says belongs to a destroyed context (a context handle reused) makes the
 * record drop that context's spares and record again.
 *
 * References: the tracker is freed by ncs_track_destroy, which its owner calls once no
 * record and no look can use it any more (the watch's last reference); the hang dump's
 * lives as long as the process. */
#ifndef NCCLSHIM_TRACK_H
#define NCCLSHIM_TRACK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclshim/cuda.h"

/* The driver functions the tracker and its users call: a view of the one CUDA list. The
 * watchdog fills it from ncclshim's table, the drop-in from the table or, under LD_AUDIT,
 * from the program's libcuda. Optional ones may be NULL (a driver without them). */
#define NCS_TRACK_DRIVER_FUNCTIONS(X) \
  X(cuEventCreate)                    \
  X(cuEventDestroy)                   \
  X(cuEventRecord)                    \
  X(cuEventQuery)                     \
  X(cuCtxGetCurrent)                  \
  X(cuCtxSetCurrent)
#define NCS_TRACK_DRIVER_OPTIONAL(X) \
  X(cuStreamIsCapturing)             \
  X(cuStreamGetCtx)                  \
  X(cuThreadExchangeStreamCaptureMode)

#define NCS_TRACK_FIELD_(name) NCCLSHIM_CUDA_PFN(name) name;
typedef struct ncs_track_driver {
  NCS_TRACK_DRIVER_FUNCTIONS(NCS_TRACK_FIELD_)
  NCS_TRACK_DRIVER_OPTIONAL(NCS_TRACK_FIELD_)
} ncs_track_driver;
#undef NCS_TRACK_FIELD_

/* The view of ncclshim's table (whose entries are never NULL: a function the driver lacks
 * answers CUDA_ERROR_NOT_SUPPORTED, which the tracker takes as "absent"). */
void ncs_track_driver_of_table(const ncclshim_cuda_table *table, ncs_track_driver *d);

/* Bytes of a replay's label, its terminating NUL included. */
enum { NCS_TRACK_LABEL_BYTES = 64 };

/* What one event covers, as its user describes it (the tracker only copies it). */
typedef struct ncs_track_op {
  const char *call; /* NULL: a graph replay, named by label */
  size_t count;     /* elements; a replay's collectives */
  int type;         /* ncclDataType_t; the drop-in: the NCCL function's index */
  uint64_t seq;     /* its user's sequence number */
  uint64_t index;   /* the drop-in: the first operation's ring index, plus one */
  uint64_t n;       /* operations covered (>= 1: several in a drop-in group) */
  /* Whose operations these are: only one owner's share an event (the drop-in's communicator;
   * NULL for the watchdog's, whose tracker is one communicator's). */
  const void *owner;
  char label[NCS_TRACK_LABEL_BYTES];
} ncs_track_op;

/* Fill `op` with no label, field by field: the label's 64 bytes are not written (a record
 * copies them only when the first is not NUL), as a compound literal would. */
static inline void ncs_track_op_set(ncs_track_op *op, const char *call, size_t count, int type,
                                    uint64_t seq, uint64_t index, uint64_t n, const void *owner) {
  op->call = call;
  op->count = count;
  op->type = type;
  op->seq = seq;
  op->index = index;
  op->n = n;
  op->owner = owner;
  op->label[0] = '\0';
}

typedef struct ncs_tracker ncs_tracker;

/* A tracker over `driver` (kept as a pointer: it outlives the tracker); NULL without memory. */
ncs_tracker *ncs_track_create(const ncs_track_driver *driver);
/* Destroy every event (a pending one is released by the driver when it completes) and free
 * the tracker; no record or look may be in progress or come later. */
void ncs_track_destroy(ncs_tracker *t);

/* Why a record or a look could not watch an operation: the driver function and its answer
 * (`call` "malloc" and result 0: no memory for a node or a context). */
typedef struct ncs_track_failure {
  const char *call;
  ncclshim_cu_result result;
} ncs_track_failure;

/* Is `stream` capturing? 1 yes (or the legacy stream during a capture), 0 no (or a driver
 * without captures), -1 with *r set when the driver could not tell. */
int ncs_track_capturing(const ncs_track_driver *d, CUstream stream, ncclshim_cu_result *r);

/* The clock of the looks' stamps and of the watchdog's deadlines and waits: CLOCK_MONOTONIC
 * in ns, the precise clock. The coarse one costs a few ns instead of about 30 on the GPU host,
 * but there it lagged by more than its stated resolution (a hang dump fired up to 2 ms before
 * its limit): a start must never be taken for earlier than it was. */
int64_t ncs_track_now_ns(void);

/* On the program's thread, inside its call, right after the operation was enqueued on
 * `stream` (which must not be capturing: ask ncs_track_capturing first): one event of the
 * stream's context, recorded on it, covers `op`. 0 when it is watched; -1 with *why set when
 * it is not (the caller tells the program). Any number of threads may record at once. */
int ncs_track_record(ncs_tracker *t, CUstream stream, const ncs_track_op *op,
                     ncs_track_failure *why);

/* What a look found: the oldest operation not known complete (pending 1: op, and start_ns:
 * when a look first saw it, at most one look after its record and never before), or a failed
 * query (failed 1: op, and why). A user that judges deadlines aims its next look at the
 * pending one's start plus its deadline, so that a hang is reported at most one interval
 * after it: the stamp is at most one interval late, and the aimed look is on time. */
typedef struct ncs_track_seen {
  int pending, failed;
  ncs_track_op op;
  int64_t start_ns;
  ncs_track_failure why;
} ncs_track_seen;

/* One look, on the one thread that looks at this tracker: the completed events leave the
 * queue (their events are reused), the oldest pending one is found. `current` is that
 * thread's current context, which a look changes to the events' own (NULL at first). 1 when
 * *seen says something (pending or failed), 0 when every operation is known complete. */
int ncs_track_look(ncs_tracker *t, CUcontext *current, ncs_track_seen *seen);

/* The tracker's counts: operations not yet known complete, and operations whose event a
 * capture took (a capture begun between the caller's check and the record: its query
 * answered a capture error; that work now belongs to a graph). */
typedef struct ncs_track_counts {
  uint64_t outstanding, captured;
} ncs_track_counts;
ncs_track_counts ncs_track_counts_of(ncs_tracker *t);

#endif
