/* The communicator wrapper's bookkeeping: references, its state and the state's names, the
 * accessors, and what the waits record in it (an outcome, a failure, whether windows
 * register). */
#include <stdlib.h>

#include "comm_internal.h"

static const char *const state_names[] = {"initializing", "ready",    "finalizing", "failed",
                                          "destroyed",    "aborting", "aborted"};

const char *ncclshim_comm_state_name(ncclshim_comm_state state) {
  return (unsigned)state < sizeof(state_names) / sizeof(state_names[0]) ? state_names[state]
                                                                        : "unknown";
}

void ncs_comm_ref(ncclshim_comm *comm) { atomic_fetch_add(&comm->refs, 1); }

void ncs_comm_unref(ncclshim_comm *comm) {
  if (atomic_fetch_sub(&comm->refs, 1) != 1) return;
  pthread_cond_destroy(&comm->abort_returned);
  pthread_mutex_destroy(&comm->lock);
  free(comm);
}

void ncclshim_comm_free(ncclshim_comm *comm) {
  if (comm != NULL) ncs_comm_unref(comm);
}

/* A snapshot, as a locked read would give: every write is made under the lock, and an
 * atomic load keeps the collectives' per-call check of the state free of the lock. */
ncclshim_comm_state ncs_comm_get_state(ncclshim_comm *comm) {
  return atomic_load_explicit(&comm->state, memory_order_acquire);
}

void ncs_comm_set_state(ncclshim_comm *comm, ncclshim_comm_state state) {
  pthread_mutex_lock(&comm->lock);
  comm->state = state;
  pthread_mutex_unlock(&comm->lock);
}

ncclshim_comm_state ncclshim_comm_state_of(const ncclshim_comm *comm) {
  return comm != NULL ? ncs_comm_get_state((ncclshim_comm *)comm) : NCCLSHIM_COMM_DESTROYED;
}

ncclComm_t ncclshim_comm_raw(const ncclshim_comm *comm) {
  return ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY ? comm->comm : NULL;
}

ncclshim_nccl *ncclshim_comm_library(const ncclshim_comm *comm) {
  return comm != NULL ? comm->nccl : NULL;
}

int ncclshim_comm_rank(const ncclshim_comm *comm) { return comm != NULL ? comm->rank : -1; }

int ncclshim_comm_size(const ncclshim_comm *comm) { return comm != NULL ? comm->nranks : -1; }

ncclshim_status ncs_comm_note(ncclshim_comm *comm, ncclshim_status status, ncclResult_t seen) {
  pthread_mutex_lock(&comm->lock);
  if (status == NCCLSHIM_OK && comm->state == NCCLSHIM_COMM_INITIALIZING) {
    comm->state = NCCLSHIM_COMM_READY;
  } else if (status == NCCLSHIM_NCCL_ERROR &&
             (comm->state == NCCLSHIM_COMM_INITIALIZING || comm->state == NCCLSHIM_COMM_READY ||
              comm->state == NCCLSHIM_COMM_FINALIZING)) {
    comm->state = NCCLSHIM_COMM_FAILED;
    comm->failure = seen;
  }
  pthread_mutex_unlock(&comm->lock);
  return status;
}

/* What is left to do about a failed communicator, from how far its abort has gone. */
static const char *what_now(int abort_started, int abort_done) {
  if (abort_done) return "it has been aborted: ncclshim_comm_free releases the wrapper";
  if (abort_started) return "its abort has started: ncclshim_comm_abort waits for it";
  return "only ncclshim_comm_abort can release it";
}

ncclshim_status ncs_comm_failed(ncclshim_comm *comm, const char *who) {
  pthread_mutex_lock(&comm->lock);
  ncclResult_t failure = comm->failure;
  const char *next = what_now(comm->abort_started, comm->abort_done);
  pthread_mutex_unlock(&comm->lock);
  if (atomic_load(&comm->failed_by_watchdog))
    return ncs_fail(comm->failed_status,
                    "%s: the watchdog failed communicator rank %d of %d: %s; %s", who, comm->rank,
                    comm->nranks, comm->reason, next);
  return ncs_fail(NCCLSHIM_NCCL_ERROR,
                  "%s: the communicator (rank %d of %d) failed earlier with %s (%d); %s", who,
                  comm->rank, comm->nranks, ncclshim_nccl_result_name(failure), (int)failure, next);
}

void ncs_comm_note_windows(ncclshim_comm *comm, int registered) {
  atomic_store(&comm->windows, registered ? 1 : 2);
}
