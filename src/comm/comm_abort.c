/* Abort on a thread of its own, so that an ncclCommAbort that hangs cannot hang its caller. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"

static void *abort_thread(void *arg) {
  ncclshim_comm *comm = arg;
  ncclResult_t r = ncclshim_nccl_functions(comm->nccl)->ncclCommAbort(comm->comm);
  if (comm->parent != NULL) { /* NCCLSHIM_COMM_SPLIT_BLOCKING: the parent goes too */
    ncclResult_t p = ncclshim_nccl_functions(comm->nccl)->ncclCommAbort(comm->parent);
    if (r == ncclSuccess) r = p;
  }
  ncs_symmem_release_orphans(comm); /* NCCL is done with them */
  pthread_mutex_lock(&comm->lock);
  comm->abort_result = r;
  comm->abort_done = 1;
  pthread_cond_broadcast(&comm->abort_returned);
  pthread_mutex_unlock(&comm->lock);
  ncs_comm_unref(comm); /* the thread's reference */
  return NULL;
}

/* Detached: nobody may ever join a hung abort. */
int ncs_comm_abort_start(ncclshim_comm *comm) {
  pthread_attr_t attr;
  pthread_t thread;
  int rc = pthread_attr_init(&attr);
  if (rc != 0) return rc;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  ncs_comm_ref(comm);
  rc = pthread_create(&thread, &attr, abort_thread, comm);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    ncs_comm_unref(comm); /* never the last: the caller holds one */
  else
    comm->abort_started = 1;
  return rc;
}

ncclshim_status ncclshim_comm_abort(ncclshim_comm *comm, int timeout_ms) {
  if (comm == NULL) return NCCLSHIM_OK;
  if (timeout_ms < 0) return ncs_negative_timeout("ncclshim_comm_abort", timeout_ms);
  ncclshim_comm_unwatch(comm); /* it cannot fail */
  int64_t deadline = ncs_deadline_ns(timeout_ms);
  struct timespec until = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
  pthread_mutex_lock(&comm->lock);
  if (comm->state == NCCLSHIM_COMM_DESTROYED || comm->state == NCCLSHIM_COMM_ABORTED) {
    pthread_mutex_unlock(&comm->lock);
    return NCCLSHIM_OK;
  }
  if (!comm->abort_started) { /* else the watchdog's, or an earlier call's, runs: wait for it */
    int rc = ncs_comm_abort_start(comm);
    if (rc != 0) {
      pthread_mutex_unlock(&comm->lock);
      return ncs_fail(NCCLSHIM_OUT_OF_MEMORY,
                      "ncclshim_comm_abort: cannot start a thread for ncclCommAbort: %s",
                      strerror(rc));
    }
    comm->state = NCCLSHIM_COMM_ABORTING;
  }
  while (!comm->abort_done &&
         pthread_cond_timedwait(&comm->abort_returned, &comm->lock, &until) != ETIMEDOUT) {
  }
  int done = comm->abort_done;
  ncclResult_t result = comm->abort_result;
  if (done) comm->state = NCCLSHIM_COMM_ABORTED;
  pthread_mutex_unlock(&comm->lock);
  if (!done)
    return ncs_fail(NCCLSHIM_TIMEOUT,
                    "abort timed out after %d ms: ncclCommAbort (rank %d of %d) has not "
                    "returned; it goes on running on its own thread, and a later "
                    "ncclshim_comm_abort waits for it again",
                    timeout_ms, comm->rank, comm->nranks);
  return ncclshim_nccl_check(comm->nccl, result, "ncclCommAbort");
}
