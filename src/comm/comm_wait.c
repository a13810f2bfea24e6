/* The bounded wait: poll ncclCommGetAsyncError until it stops saying ncclInProgress. */
#include "comm_internal.h"

ncclshim_status ncclshim_poll(ncclshim_nccl *nccl, ncclComm_t comm, int *busy, ncclResult_t *seen) {
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

ncclshim_status ncclshim_comm_poll(ncclshim_comm *comm, int *busy, ncclResult_t *seen) {
  pthread_mutex_lock(&comm->lock);
  if (comm->abort_started) {
    pthread_mutex_unlock(&comm->lock);
    *seen = ncclInternalError;
    return ncclshim_comm_failed(comm, "wait");
  }
  ncclshim_status status = ncclshim_poll(comm->nccl, comm->comm, busy, seen);
  pthread_mutex_unlock(&comm->lock);
  return status;
}

/* Through the wrapper when there is one. */
static ncclshim_status poll_either(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                                   int *busy, ncclResult_t *seen) {
  return owner != NULL ? ncclshim_comm_poll(owner, busy, seen)
                       : ncclshim_poll(nccl, comm, busy, seen);
}

ncclshim_status ncclshim_wait_until(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                                    int64_t deadline_ns, int timeout_ms, ncclResult_t *seen) {
  ncclshim_backoff backoff = ncclshim_backoff_start(deadline_ns);
  for (;;) {
    int busy = 0;
    ncclshim_status status = poll_either(nccl, comm, owner, &busy, seen);
    if (status != NCCLSHIM_OK || !busy) return status;
    if (!ncclshim_backoff_sleep(&backoff))
      return ncclshim_fail(NCCLSHIM_TIMEOUT,
                           "the communicator is still in progress after %d ms "
                           "(ncclCommGetAsyncError keeps answering ncclInProgress)",
                           timeout_ms);
  }
}

ncclshim_status ncclshim_wait_stream_until(const ncclshim_cuda *cuda, CUstream stream,
                                           ncclshim_nccl *nccl, ncclComm_t comm,
                                           ncclshim_comm *owner, int64_t deadline_ns,
                                           int timeout_ms, const char *running, const char *hint,
                                           ncclResult_t *seen) {
  ncclshim_backoff backoff = ncclshim_backoff_start(deadline_ns);
  for (;;) {
    int idle = 0, busy = 0;
    ncclshim_status status = ncclshim_cuda_stream_query(cuda, stream, &idle);
    if (status != NCCLSHIM_OK || idle) return status;
    /* Busy is no answer here: only the stream says when its work is done. */
    if ((status = poll_either(nccl, comm, owner, &busy, seen)) != NCCLSHIM_OK) return status;
    if (!ncclshim_backoff_sleep(&backoff))
      return ncclshim_fail(NCCLSHIM_TIMEOUT, "%s after %d ms%s", running, timeout_ms, hint);
  }
}

ncclshim_status ncclshim_nccl_wait(ncclshim_nccl *nccl, ncclComm_t comm, int timeout_ms) {
  nccl = ncclshim_comm_resolve(nccl);
  if (comm == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_wait: comm is NULL");
  if (timeout_ms < 0)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                         "ncclshim_nccl_wait: timeout %d ms is negative (no wait is unbounded)",
                         timeout_ms);
  ncclshim_status status = ncclshim_comm_usable(nccl, "ncclshim_nccl_wait");
  if (status != NCCLSHIM_OK) return status;
  ncclResult_t seen;
  return ncclshim_wait_until(nccl, comm, NULL, ncclshim_deadline_ns(timeout_ms), timeout_ms, &seen);
}
