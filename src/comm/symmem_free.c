/* Freeing a symmetric buffer: deregister the window (collective), then ncclMemFree. */
#include <stdlib.h>

#include "symmem_internal.h"

/* Deregister, or finish a deregistration an earlier free started; OK once NCCL is done. */
static ncclshim_status deregister(ncclshim_symmem *mem, int timeout_ms) {
  ncclshim_comm *comm = mem->comm;
  if (!mem->deregistering) {
    ncclResult_t r =
        ncclshim_nccl_functions(comm->nccl)->ncclCommWindowDeregister(comm->comm, mem->window);
    if (r != ncclSuccess && r != ncclInProgress)
      return ncclshim_nccl_check(comm->nccl, r, "ncclCommWindowDeregister");
    mem->deregistering = 1;
  }
  ncclshim_status status = ncclshim_comm_wait(comm, timeout_ms);
  if (status != NCCLSHIM_OK) return status;
  mem->window = NULL;
  mem->deregistering = 0;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_symmem_free(ncclshim_symmem *mem, int timeout_ms) {
  if (mem == NULL) return NCCLSHIM_OK;
  if (timeout_ms < 0) return ncs_negative_timeout("ncclshim_symmem_free", timeout_ms);
  ncclshim_comm *comm = mem->comm;
  ncclshim_comm_state state = ncclshim_comm_state_of(comm);
  int gone = state == NCCLSHIM_COMM_ABORTED || state == NCCLSHIM_COMM_DESTROYED;
  if ((mem->window != NULL || mem->deregistering) && !gone) {
    if (state != NCCLSHIM_COMM_READY)
      return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                      "ncclshim_symmem_free: the communicator is %s, so the window cannot be "
                      "deregistered and NCCL may still use the memory; abort the "
                      "communicator (ncclshim_comm_abort), then free the buffer",
                      ncclshim_comm_state_name(state));
    ncclshim_status status = deregister(mem, timeout_ms);
    if (status != NCCLSHIM_OK) return status;
  }
  ncclResult_t r = ncclshim_nccl_functions(comm->nccl)->ncclMemFree(mem->ptr);
  ncclshim_nccl *nccl = comm->nccl;
  ncs_comm_unref(comm);
  free(mem);
  return ncclshim_nccl_check(nccl, r, "ncclMemFree");
}

static void free_orphans(ncclshim_comm *comm, ncclshim_symmem *mem) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(comm->nccl);
  while (mem != NULL) {
    ncclshim_symmem *next = mem->next_orphan;
    t->ncclMemFree(mem->ptr);
    free(mem);
    mem = next;
  }
}

void ncs_comm_adopt(ncclshim_comm *comm, ncclshim_symmem *mem) {
  pthread_mutex_lock(&comm->lock);
  int done = comm->abort_done; /* the watchdog's abort may have returned meanwhile */
  if (!done) {
    mem->next_orphan = comm->orphans;
    comm->orphans = mem;
  }
  pthread_mutex_unlock(&comm->lock);
  if (done) free_orphans(comm, mem);
  ncs_comm_unref(comm); /* the buffer's: never the last, the caller holds one */
}

void ncs_symmem_release_orphans(ncclshim_comm *comm) {
  pthread_mutex_lock(&comm->lock);
  ncclshim_symmem *orphans = comm->orphans;
  comm->orphans = NULL;
  pthread_mutex_unlock(&comm->lock);
  free_orphans(comm, orphans);
}
