/* The communicator wrapper and the clock the waits share. For src/comm only. */
#ifndef NCCLSHIM_COMM_INTERNAL_H
#define NCCLSHIM_COMM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../internal.h"
#include "ncclshim/comm.h"

struct ncclshim_comm {
  ncclshim_nccl *nccl;
  ncclComm_t comm; /* NCCL's; not NULL */
  int rank, nranks;
  atomic_int refs;               /* the caller's, the abort thread's, one per symmetric buffer */
  pthread_mutex_t lock;          /* guards the fields below */
  pthread_cond_t abort_returned; /* on CLOCK_MONOTONIC */
  ncclshim_comm_state state;
  int abort_done;            /* ncclCommAbort has returned ... */
  ncclResult_t abort_result; /* ... this */
  ncclResult_t failure;      /* the error that made it FAILED */
  atomic_int windows;        /* comm_caps.c: 0 not known, 1 windows register, 2 they do not */
};
/* Record whether a registration on the communicator gave a window (comm_caps.c). */
void ncclshim_comm_note_windows(ncclshim_comm *comm, int registered);
/* "; device API: the loaded NCCL is ..." for ncclInvalidUsage from a device-API call, else "". */
void ncclshim_devapi_hint(ncclshim_nccl *nccl, ncclResult_t result, const char *call, char *buf,
                          size_t size);

/* Take and drop a reference; the last drop frees the wrapper. */
void ncclshim_comm_ref(ncclshim_comm *comm);
void ncclshim_comm_unref(ncclshim_comm *comm);

/* Read and set the state under the lock. */
ncclshim_comm_state ncclshim_comm_get_state(ncclshim_comm *comm);
void ncclshim_comm_set_state(ncclshim_comm *comm, ncclshim_comm_state state);
/* Record a wait's outcome: OK makes an INITIALIZING communicator READY, NCCL_ERROR makes a
 * live one FAILED with `seen` as the cause. Returns status. */
ncclshim_status ncclshim_comm_note(ncclshim_comm *comm, ncclshim_status status, ncclResult_t seen);
/* Wait on the communicator until an absolute deadline, and note the outcome. */
ncclshim_status ncclshim_comm_wait_deadline(ncclshim_comm *comm, int64_t deadline_ns,
                                            int timeout_ms);

/* ---- Time ------------------------------------------------------------------------------ */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t ncclshim_now_ns(void);
/* now + timeout_ms, in ns. */
int64_t ncclshim_deadline_ns(int timeout_ms);

/* Backoff between polls: a few yields, then sleeps from 10 us doubling to 1 ms, never past
 * the deadline. */
typedef struct ncclshim_backoff {
  int64_t deadline_ns;
  int64_t sleep_ns;
  int yields; /* polls left that only yield */
} ncclshim_backoff;
ncclshim_backoff ncclshim_backoff_start(int64_t deadline_ns);
/* Sleep the next step; 0 when the deadline has already passed (nothing slept). */
int ncclshim_backoff_sleep(ncclshim_backoff *backoff);

/* One look at ncclCommGetAsyncError: OK with *busy set (ncclInProgress) or NCCL_ERROR;
 * *seen gets the code it saw (the asynchronous error, or the call's own failure). */
ncclshim_status ncclshim_poll(ncclshim_nccl *nccl, ncclComm_t comm, int *busy, ncclResult_t *seen);
/* ncclshim_nccl_wait against an absolute deadline (a shared one across several waits). */
ncclshim_status ncclshim_wait_until(ncclshim_nccl *nccl, ncclComm_t comm, int64_t deadline_ns,
                                    int timeout_ms, ncclResult_t *seen);

/* The default handle for NULL; the status of a handle that cannot be used, with a message. */
ncclshim_nccl *ncclshim_comm_resolve(ncclshim_nccl *nccl);
ncclshim_status ncclshim_comm_usable(ncclshim_nccl *nccl, const char *who);

#endif
