/* Collective teardown: finalize, wait for it within the deadline, destroy. */
#include "comm_internal.h"

static ncclshim_status refuse(ncclshim_comm *comm, ncclshim_comm_state state) {
  if (state == NCCLSHIM_COMM_ABORTING)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_comm_destroy: an abort of this communicator is still running; "
                    "ncclshim_comm_abort waits for it");
  /* NCCL_ERROR whatever the failure was: destroy's TIMEOUT means "FINALIZING, call again",
   * which a FAILED communicator never is (the watchdog's deadline failures say TIMEOUT
   * elsewhere). */
  ncs_comm_failed(comm, "ncclshim_comm_destroy");
  return NCCLSHIM_NCCL_ERROR;
}

/* An NCCL step of the teardown failed: the communicator is FAILED. */
static ncclshim_status step_failed(ncclshim_comm *comm, ncclResult_t r, const char *call) {
  return ncs_comm_note(comm, ncclshim_nccl_check(comm->nccl, r, call), r);
}

ncclshim_status ncclshim_comm_destroy(ncclshim_comm *comm, int timeout_ms) {
  if (comm == NULL) return NCCLSHIM_OK;
  if (timeout_ms < 0) return ncs_negative_timeout("ncclshim_comm_destroy", timeout_ms);
  int64_t deadline = ncs_deadline_ns(timeout_ms);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(comm->nccl);
  ncclshim_status status;
  ncclshim_comm_state state = ncs_comm_get_state(comm);
  if (state == NCCLSHIM_COMM_READY) ncclshim_comm_unwatch(comm); /* it cannot fail */
  if (state == NCCLSHIM_COMM_DESTROYED || state == NCCLSHIM_COMM_ABORTED) return NCCLSHIM_OK;
  if (state == NCCLSHIM_COMM_ABORTING || state == NCCLSHIM_COMM_FAILED) return refuse(comm, state);
  if (state == NCCLSHIM_COMM_INITIALIZING) {
    if ((status = ncs_comm_wait_deadline(comm, deadline, timeout_ms)) != NCCLSHIM_OK) return status;
    state = NCCLSHIM_COMM_READY;
  }
  /* One communicator at a time, the same steps for each: NCCLSHIM_COMM_SPLIT_BLOCKING's child
   * first (comm->comm while parent is set), then the parent. NCCL_COMM_BLOCKING may have made
   * the child non-blocking, so its finalize too may answer ncclInProgress and is waited for. */
  for (;;) {
    if (state == NCCLSHIM_COMM_READY &&
        ncclshim_nccl_has_function(comm->nccl, NCCLSHIM_FN_ncclCommFinalize)) {
      ncclResult_t r = t->ncclCommFinalize(comm->comm);
      if (r != ncclSuccess && r != ncclInProgress) return step_failed(comm, r, "ncclCommFinalize");
      ncs_comm_set_state(comm, state = NCCLSHIM_COMM_FINALIZING);
    }
    if (state == NCCLSHIM_COMM_FINALIZING &&
        (status = ncs_comm_wait_deadline(comm, deadline, timeout_ms)) != NCCLSHIM_OK)
      return status;
    ncclResult_t r = t->ncclCommDestroy(comm->comm);
    if (r != ncclSuccess) return step_failed(comm, r, "ncclCommDestroy");
    if (comm->parent == NULL) break;
    pthread_mutex_lock(&comm->lock); /* the child is gone: the parent's turn */
    comm->comm = comm->parent;
    comm->parent = NULL;
    comm->state = state = NCCLSHIM_COMM_READY;
    pthread_mutex_unlock(&comm->lock);
  }
  ncs_comm_set_state(comm, NCCLSHIM_COMM_DESTROYED);
  ncs_symmem_release_orphans(comm); /* NCCL is done with them */
  return NCCLSHIM_OK;
}
