/* A watched communicator: its tracker of GPU progress (src/track), fed by the thread that
 * records (comm_watch_record.c) and looked at by the watchdog's thread (comm_watchdog.c,
 * comm_watch_pass.c); its life (comm_watch.c). The watch keeps only the watchdog's policy:
 * the deadline, the failure, the abort and the callback. For src/comm only.
 *
 * Lifetimes. A watch is freed when its last reference goes: one for the communicator's link
 * (comm->watch), one for the watchdog's list, one per pass looking at it. A recording thread
 * holds none: it pins the link instead, setting WATCH_PINNED in comm->watch for the length of
 * the call; an unwatch that finds the pin leaves the link's reference to the pinning thread,
 * which drops it when it is done. The watchdog is freed when its owner (stop) and every watch
 * made on it are gone.
 *
 * Locks. The pin makes the recording thread the only one that touches `seq` and `counts`
 * (ncclshim_comm_watch_counts pins too); the tracker has its own lock (src/track/track.h),
 * never held across a driver call. */
#ifndef NCCLSHIM_COMM_WATCH_H
#define NCCLSHIM_COMM_WATCH_H

#include "src/track/track.h"
#include "comm_internal.h"

#define WATCH_PINNED ((uintptr_t)1) /* the low bit of comm->watch: a record is using it */

typedef struct ncs_watch {
  atomic_int refs;
  atomic_int unwatched;
  ncclshim_comm *comm; /* holds a reference */
  ncclshim_watchdog *dog;
  const ncclshim_cuda *cuda;
  int64_t timeout_ns;
  struct ncs_watch *next; /* the watchdog's list, under its lock */
  ncs_tracker *track;
  uint64_t seq;                 /* the pinning thread's */
  ncclshim_watch_counts counts; /* the pinning thread's; outstanding comes from the tracker */
} ncs_watch;

struct ncclshim_watchdog {
  pthread_t thread;
  atomic_int refs;      /* the owner's (until stop) and one per watch */
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;  /* on CLOCK_MONOTONIC */
  int stop;
  int64_t interval_ns;
  const ncclshim_cuda *cuda;
  ncs_track_driver driver; /* the view of cuda's table that the trackers use */
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

/* One look at a watch on the watchdog's thread (comm_watch_pass.c): the tracker's look,
 * then the deadline and NCCL's error. 1 with the failure written into status/code/text when
 * the communicator must be failed; else *due_ns is lowered to the deadline of its oldest
 * pending operation, when it has one (the next pass is aimed at it). */
typedef struct ncs_watch_verdict {
  ncclshim_status status; /* TIMEOUT, NCCL_ERROR or CUDA_ERROR */
  ncclResult_t code;
  char text[640];
} ncs_watch_verdict;
int ncs_watch_inspect(ncs_watch *w, CUcontext *current, ncs_watch_verdict *v, int64_t *due_ns);

#endif
