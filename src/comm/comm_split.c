/* Bounded init, blocking operations: once a non-blocking init has finished, split it into a
 * child whose config is blocking. The parent is non-blocking, so ncclCommSplit answers
 * ncclInProgress (NCCL's group takes its mode from the parent) and its completion shows in
 * the parent's ncclCommGetAsyncError, which the same deadline bounds. */
#include "comm_internal.h"

ncclshim_status ncs_comm_split_child(ncclshim_comm *comm, int64_t deadline_ns, int timeout_ms,
                                     ncclResult_t *seen) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(comm->nccl);
  if (!comm->split_started) {
    struct ncclshim_nccl_config config;
    NCCLSHIM_NCCL_CONFIG_INIT(&config);
    ncclshim_nccl_config_set_int(comm->nccl, &config, sizeof(config), NCCLSHIM_CONFIG_BLOCKING, 1);
    comm->split_started = 1;
    ncclResult_t r =
        t->ncclCommSplit(comm->comm, 0, comm->rank, &comm->child, (ncclConfig_t *)&config);
    if (r != ncclSuccess && r != ncclInProgress) {
      *seen = r;
      return ncclshim_nccl_check(comm->nccl, r, "ncclCommSplit (into a blocking child)");
    }
  }
  ncclshim_status status =
      ncs_wait_until(comm->nccl, comm->comm, comm, deadline_ns, timeout_ms, seen);
  if (status != NCCLSHIM_OK) return status;
  if (comm->child == NULL) {
    *seen = ncclInternalError;
    return ncs_fail(NCCLSHIM_NCCL_ERROR,
                    "ncclCommSplit (into a blocking child) finished without a communicator");
  }
  pthread_mutex_lock(&comm->lock);
  comm->parent = comm->comm;
  comm->comm = comm->child;
  pthread_mutex_unlock(&comm->lock);
  return NCCLSHIM_OK;
}
