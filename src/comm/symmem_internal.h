/* The symmetric buffer handle. For src/comm only. */
#ifndef NCCLSHIM_SYMMEM_INTERNAL_H
#define NCCLSHIM_SYMMEM_INTERNAL_H

#include "comm_internal.h"
#include "ncclshim/symmem.h"

struct ncclshim_symmem {
  ncclshim_comm *comm;      /* a reference is held */
  void *ptr;                /* from ncclMemAlloc */
  size_t size;              /* a multiple of 4096 */
  ncclshim_window_t window; /* NCCL writes it, possibly at group end or later */
  int in_group;             /* registered between the caller's ncclGroupStart and ncclGroupEnd */
  unsigned group_ends;      /* the communicator's group_ends when it was registered */
  int complete;             /* the window was checked */
  int deregistering;        /* ncclCommWindowDeregister was accepted; its wait is not over */
  struct ncclshim_symmem *next_orphan; /* the communicator's orphans (ncs_comm_adopt) */
};

/* OK unless `stream` is capturing a CUDA graph (INVALID_ARGUMENT) or the driver gives an
 * unexpected answer (CUDA_ERROR). Skipped (OK) when no driver can answer. */
ncclshim_status ncs_symmem_check_capture(cudaStream_t stream, const char *who);

#endif
