/* A watched communicator: its ring of events and the operations waiting for one, shared by
 * the thread that records (comm_watch_record.c) and the watchdog's thread
 * (comm_watchdog.c, comm_watch_pass.c); its life (comm_watch.c). For src/comm only.
 *
 * Lifetimes. A watch is freed when its last reference goes: one for the communicator's link
 * (comm->watch), one for the watchdog's list, one per pass looking at it. A recording thread
 * holds none: it pins the link instead, setting WATCH_PINNED in comm->watch for the length of
 * the call; an unwatch that finds the pin leaves the link's reference to the pinning thread,
 * which drops it when it is done. The watchdog is freed when its owner (stop) and every watch
 * made on it are gone.
 *
 * Locks. w->lock, a spin lock (watch_lock), guards the ring and is held for a few steps at a
 * time, never across a driver call, an allocation or a wait: a record reserves a slot under
 * it, records the event without it, then publishes the slot under it. */
#ifndef NCCLSHIM_COMM_WATCH_H
#define NCCLSHIM_COMM_WATCH_H

#include <sched.h>

#include "comm_internal.h"

/* Events per communicator: groups of operations outstanding at once before new operations
 * wait for a free one. */
enum { NCCLSHIM_WATCH_EVENTS = 256 };

#define WATCH_PINNED ((uintptr_t)1) /* the low bit of comm->watch: a record is using it */

/* Operations that one event covers, described by the first (the oldest not known done). */
typedef struct ncs_watch_ops {
  CUstream stream;
  const char *call; /* NULL: a graph replay, named by label */
  char label[NCCLSHIM_WATCH_LABEL_MAX + 1];
  size_t count; /* elements; a replay's collectives */
  int type;
  uint64_t first_seq, last_seq;
  uint64_t n;       /* operations covered */
  int64_t start_ns; /* when the first was recorded (or its clock restarted) */
} ncs_watch_ops;

enum { SLOT_RESERVED = 1, SLOT_PUBLISHED, SLOT_VOID }; /* VOID: its record failed */

typedef struct ncs_watch_slot {
  CUevent event;
  int state;
  ncs_watch_ops ops;
} ncs_watch_slot;

typedef struct ncs_watch {
  atomic_int refs;
  atomic_int unwatched;
  ncclshim_comm *comm; /* holds a reference */
  ncclshim_watchdog *dog;
  const ncclshim_cuda *cuda;
  int64_t timeout_ns;
  int64_t close_ns; /* a pass closes a group of operations that spans this (comm_watch.c) */
  CUcontext context;
  struct ncs_watch *next;       /* the watchdog's list, under its lock */
  atomic_int lock;              /* guards everything below: watch_lock */
  unsigned oldest, outstanding; /* slots reserved or published, oldest first */
  CUstream newest_stream;       /* of the newest slot */
  uint64_t seq;
  ncs_watch_ops waiting; /* operations waiting for an event (waiting.n of them) */
  uint64_t closed_seq;   /* waiting.first_seq of a group a pass closed: no more join it */
  ncclshim_watch_counts counts;
  ncs_watch_slot slots[NCCLSHIM_WATCH_EVENTS];
} ncs_watch;

struct ncclshim_watchdog {
  pthread_t thread;
  atomic_int refs;      /* the owner's (until stop) and one per watch */
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;  /* on CLOCK_MONOTONIC */
  int stop;
  int64_t interval_ns;
  const ncclshim_cuda *cuda;
  ncclshim_watchdog_callback on_failure;
  void *user;
  ncs_watch *watches;
  size_t nwatches;
};

/* Clear comm->watch when it links `only` (any watch: NULL) and drop the link's reference,
 * or leave it to the thread that pins it; the watch it linked, with a reference for the
 * caller, or NULL. */
ncs_watch *ncs_watch_unlink(ncclshim_comm *comm, ncs_watch *only);
void ncs_watch_ref(ncs_watch *watch);
/* Drop a reference; the last destroys the events and frees the watch. */
void ncs_watch_unref(ncs_watch *watch);
void ncs_watchdog_unref(ncclshim_watchdog *dog);

/* w->lock: briefly held, it costs a record one atomic exchange and a plain store, where a
 * mutex costs two atomic operations and two calls. A waiter yields the processor, in case
 * the holder was descheduled. */
static inline void watch_lock(ncs_watch *w) {
  while (atomic_exchange_explicit(&w->lock, 1, memory_order_acquire) != 0)
    while (atomic_load_explicit(&w->lock, memory_order_relaxed) != 0) sched_yield();
}
static inline void watch_unlock(ncs_watch *w) {
  atomic_store_explicit(&w->lock, 0, memory_order_release);
}

/* The slot `i` places after the oldest; under the lock. */
static inline ncs_watch_slot *ncs_watch_slot_at(ncs_watch *w, unsigned i) {
  return &w->slots[(w->oldest + i) % NCCLSHIM_WATCH_EVENTS];
}
/* Reserve the next slot for `ops` (the lock held, a slot free): the caller records its event
 * without the lock, then calls ncs_watch_publish. */
ncs_watch_slot *ncs_watch_reserve(ncs_watch *w, const ncs_watch_ops *ops);
/* The lock not held: publish the slot (result 0) or void it; counts the event. */
void ncs_watch_publish(ncs_watch *w, ncs_watch_slot *slot, ncclshim_cu_result r, int catch_up);

/* 1 when a driver answer concerns a stream capture, never a failure: 900 .. 908, and
 * CUDA_ERROR_INVALID_VALUE, which a query of an event recorded in a capture can give. */
int ncs_cuda_capture_answer(ncclshim_cu_result r);
/* Is `stream` capturing? 0 no, 1 yes (or the legacy stream during a capture), -1 with *r
 * set when the driver could not tell. */
int ncs_stream_capturing(const ncclshim_cuda *cuda, CUstream stream, ncclshim_cu_result *r);

/* One look at a watch on the watchdog's thread (comm_watch_pass.c): retire finished events,
 * catch up the operations left waiting, check the deadline and NCCL's error. 1 with the
 * failure written into status/code/text when the communicator must be failed. */
typedef struct ncs_watch_verdict {
  ncclshim_status status; /* TIMEOUT, NCCL_ERROR or CUDA_ERROR */
  ncclResult_t code;
  char text[640];
} ncs_watch_verdict;
int ncs_watch_inspect(ncs_watch *w, CUcontext *current, ncs_watch_verdict *v);

#endif
