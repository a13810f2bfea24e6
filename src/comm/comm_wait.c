/* The bounded wait: poll ncclCommGetAsyncError until it stops saying ncclInProgress. */
#include "comm_internal.h"

ncclshim_status ncs_poll(ncclshim_nccl *nccl, ncclComm_t comm, int *busy, ncclResult_t *seen) {
  ncclResult_t async = ncclInProgress;
  ncclResult_t r = ncclshim_nccl_functions(nccl)->ncclCommGetAsyncError(comm, &async);
  if (r != ncclSuccess) {
    *seen = r;
    return ncclshim_nccl_check(nccl, r, "ncclCommGetAsyncError");
  }
  *seen = async;
  *busy = async == ncclInProgress;
  if (async == ncclSuccess || async == ncclInProgress) return NCCLSHIM_OK;
  return ncclshim_nccl_check(nccl, async, "the communicator (asynchronous error)");
}

ncclshim_status ncs_comm_poll(ncclshim_comm *comm, int *busy, ncclResult_t *seen) {
  pthread_mutex_lock(&comm->lock);
  if (comm->abort_started) {
    pthread_mutex_unlock(&comm->lock);
    *seen = ncclInternalError;
    return ncs_comm_failed(comm, "wait");
  }
  ncclshim_status status = ncs_poll(comm->nccl, comm->comm, busy, seen);
  pthread_mutex_unlock(&comm->lock);
  return status;
}

/* Through the wrapper when there is one. */
static ncclshim_status poll_either(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                                   int *busy, ncclResult_t *seen) {
  return owner != NULL ? ncs_comm_poll(owner, busy, seen) : ncs_poll(nccl, comm, busy, seen);
}

ncclshim_status ncs_wait_until(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                               int64_t deadline_ns, int timeout_ms, ncclResult_t *seen) {
  ncs_backoff backoff = ncs_backoff_start(deadline_ns);
  for (;;) {
    int busy = 0;
    ncclshim_status status = poll_either(nccl, comm, owner, &busy, seen);
    if (status != NCCLSHIM_OK || !busy) return status;
    if (!ncs_backoff_sleep(&backoff))
      return ncs_fail(NCCLSHIM_TIMEOUT,
                      "the communicator is still in progress after %d ms "
                      "(ncclCommGetAsyncError keeps answering ncclInProgress)",
                      timeout_ms);
  }
}

ncclshim_status ncs_wait_stream_until(const ncclshim_cuda *cuda, CUstream stream,
                                      ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                                      int64_t deadline_ns, int timeout_ms, const char *running,
                                      const char *hint, ncclResult_t *seen) {
  ncs_backoff backoff = ncs_backoff_start(deadline_ns);
  for (;;) {
    int idle = 0, busy = 0;
    ncclshim_status status = ncclshim_cuda_stream_query(cuda, stream, &idle);
    if (status != NCCLSHIM_OK || idle) return status;
    /* Busy is no answer here: only the stream says when its work is done. */
    if ((status = poll_either(nccl, comm, owner, &busy, seen)) != NCCLSHIM_OK) return status;
    if (!ncs_backoff_sleep(&backoff))
      return ncs_fail(NCCLSHIM_TIMEOUT, "%s after %d ms%s", running, timeout_ms, hint);
  }
}

ncclshim_status ncclshim_nccl_wait(ncclshim_nccl *nccl, ncclComm_t comm, int timeout_ms) {
  nccl = ncs_comm_resolve(nccl);
  if (comm == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_wait: comm is NULL");
  if (timeout_ms < 0) return ncs_negative_timeout("ncclshim_nccl_wait", timeout_ms);
  ncclshim_status status = ncs_comm_usable(nccl, "ncclshim_nccl_wait");
  if (status != NCCLSHIM_OK) return status;
  ncclResult_t seen;
  return ncs_wait_until(nccl, comm, NULL, ncs_deadline_ns(timeout_ms), timeout_ms, &seen);
}
