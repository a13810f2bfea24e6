/* The communicator wrapper and the clock the waits share. For src/comm only. */
#ifndef NCCLSHIM_COMM_INTERNAL_H
#define NCCLSHIM_COMM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "src/internal.h"
#include "ncclshim/comm.h"

struct ncclshim_comm {
  ncclshim_nccl *nccl;
  ncclComm_t comm; /* NCCL's; not NULL */
  int rank, nranks;
  atomic_int refs;               /* the caller's, the abort thread's, one per symmetric buffer */
  pthread_mutex_t lock;          /* guards the fields below */
  pthread_cond_t abort_returned; /* on CLOCK_MONOTONIC */
  /* written under the lock; ncs_comm_get_state reads it without */
  _Atomic ncclshim_comm_state state;
  int abort_done;                /* ncclCommAbort has returned ... */
  ncclResult_t abort_result;     /* ... this */
  ncclResult_t failure;          /* the error that made it FAILED */
  int abort_started;             /* the abort thread runs or ran (ours, or the watchdog's) */
  ncclshim_status failed_status; /* what checked calls on a FAILED one return */
  /* Watching (comm_watch.c): the watch, set and cleared by the watching thread's calls;
   * the watchdog's message, written once under the lock before failed_by_watchdog is set. */
  struct ncs_watch *_Atomic watch;
  atomic_int failed_by_watchdog;
  char reason[768];
  /* NCCLSHIM_COMM_SPLIT_BLOCKING (comm_split.c): the parent while READY (comm is then the child);
   * the split asked for, and started; the child as NCCL writes it. */
  ncclComm_t parent;
  int split_wanted, split_started;
  ncclComm_t child;
  atomic_int windows;     /* comm_caps.c: 0 not known, 1 windows register, 2 they do not */
  atomic_uint group_ends; /* ncclshim_comm_group_end calls that named it (symmem_complete) */
  /* Symmetric buffers whose registration timed out (symmem_alloc.c), under the lock: NCCL may
   * still write their window and use their memory until it is done with the communicator. */
  struct ncclshim_symmem *orphans;
};
/* Keep a buffer whose registration timed out until NCCL is done with the communicator; it
 * no longer holds a reference (the communicator holds it). */
void ncs_comm_adopt(ncclshim_comm *comm, struct ncclshim_symmem *mem);
/* Give the orphans back (ncclMemFree), once NCCL is done with the communicator: its
 * ncclCommAbort returned, or ncclCommDestroy did (symmem_free.c). A wrapper freed without
 * either leaves them to NCCL, as it leaves the communicator. */
void ncs_symmem_release_orphans(ncclshim_comm *comm);
/* Record whether a registration on the communicator gave a window (comm_caps.c reads it). */
void ncs_comm_note_windows(ncclshim_comm *comm, int registered);
/* "; device API: the loaded NCCL is ..." for ncclInvalidUsage from a device-API call, else ""
 * (comm_devapi.c). */
void ncs_devapi_hint(ncclshim_nccl *nccl, ncclResult_t result, const char *call, char *buf,
                     size_t size);

/* After the parent's init finished: start the split (once) and wait for it until the
 * deadline; on OK the communicator's comm is the child. *seen as ncs_wait_until's. */
ncclshim_status ncs_comm_split_child(ncclshim_comm *comm, int64_t deadline_ns, int timeout_ms,
                                     ncclResult_t *seen);

/* Start ncclCommAbort on its own detached thread; with the lock held and abort_started 0.
 * Returns 0 or the pthread error. */
int ncs_comm_abort_start(ncclshim_comm *comm);
/* The checked calls' answer for a FAILED communicator (the lock not held). */
ncclshim_status ncs_comm_failed(ncclshim_comm *comm, const char *who);

/* Take and drop a reference; the last drop frees the wrapper. */
void ncs_comm_ref(ncclshim_comm *comm);
void ncs_comm_unref(ncclshim_comm *comm);

/* Read and set the state under the lock. */
ncclshim_comm_state ncs_comm_get_state(ncclshim_comm *comm);
void ncs_comm_set_state(ncclshim_comm *comm, ncclshim_comm_state state);
/* Record a wait's outcome: OK makes an INITIALIZING communicator READY, NCCL_ERROR makes a
 * live one FAILED with `seen` as the cause. Returns status. */
ncclshim_status ncs_comm_note(ncclshim_comm *comm, ncclshim_status status, ncclResult_t seen);
/* Wait on the communicator until an absolute deadline, and note the outcome. */
ncclshim_status ncs_comm_wait_deadline(ncclshim_comm *comm, int64_t deadline_ns, int timeout_ms);

/* ---- Time ------------------------------------------------------------------------------ */

/* now (ncs_track_now_ns, the one clock of the watchdog and the tracker) + timeout_ms, in ns. */
int64_t ncs_deadline_ns(int timeout_ms);
/* The refusal of a negative timeout (no wait of the API is unbounded): INVALID_ARGUMENT, the
 * message naming `who` and the value. */
ncclshim_status ncs_negative_timeout(const char *who, int timeout_ms);

/* Pacing between polls (comm_time.c): back-to-back polls that yield the core while a sleep
 * would overshoot by more than 5 % of the time waited (for 2 ms at most), then sleeps of
 * 1/25 of the time waited (less the sleeps' measured lateness), at most 1 ms, never past
 * the deadline. */
typedef struct ncs_backoff {
  int64_t deadline_ns;
  int64_t start_ns;
  int64_t lateness_ns;   /* how late sleeps come back, learnt */
  int64_t spin_limit_ns; /* NCCLSHIM_WAIT_SPIN_US in ns */
  unsigned polls;        /* back-to-back polls so far: every YIELD_EVERY-th yields */
} ncs_backoff;
ncs_backoff ncs_backoff_start(int64_t deadline_ns);
/* The sleep the next step would take at `now`; 0: poll again at once. */
int64_t ncs_backoff_step_ns(const ncs_backoff *backoff, int64_t now);
/* Pause before the next poll; 0 when the deadline has already passed (nothing done). */
int ncs_backoff_sleep(ncs_backoff *backoff);

/* One look at ncclCommGetAsyncError: OK with *busy set (ncclInProgress) or NCCL_ERROR;
 * *seen gets the code it saw (the asynchronous error, or the call's own failure). */
ncclshim_status ncs_poll(ncclshim_nccl *nccl, ncclComm_t comm, int *busy, ncclResult_t *seen);
/* The same on a wrapper's communicator, under its lock, and not once an abort has started
 * (the watchdog's may have freed NCCL's communicator): then the failure. */
ncclshim_status ncs_comm_poll(ncclshim_comm *comm, int *busy, ncclResult_t *seen);
/* ncclshim_nccl_wait against an absolute deadline (a shared one across several waits);
 * through ncs_comm_poll when `owner` is given. */
ncclshim_status ncs_wait_until(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                               int64_t deadline_ns, int timeout_ms, ncclResult_t *seen);
/* Wait until `stream` is idle, polling the communicator meanwhile as ncs_wait_until does
 * (a dead peer shows up as its error instead of a hang). The stream query's failure or the
 * poll's as they come; the timeout says "<running> after N ms<hint>", which names what was
 * waited for. *seen as ncs_wait_until's. */
ncclshim_status ncs_wait_stream_until(const ncclshim_cuda *cuda, CUstream stream,
                                      ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                                      int64_t deadline_ns, int timeout_ms, const char *running,
                                      const char *hint, ncclResult_t *seen);

/* The default handle for NULL; the status of a handle that cannot be used, with a message. */
ncclshim_nccl *ncs_comm_resolve(ncclshim_nccl *nccl);
ncclshim_status ncs_comm_usable(ncclshim_nccl *nccl, const char *who);

#endif
