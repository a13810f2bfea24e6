/* Symmetric buffers: ncclMemAlloc, then a NCCL_WIN_COLL_SYMMETRIC window, checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclshim/diag.h"
#include "symmem_internal.h"

#define ALIGNMENT ((size_t)NCCL_WIN_REQUIRED_ALIGNMENT)

void *ncclshim_symmem_ptr(const ncclshim_symmem *mem) { return mem ? mem->ptr : NULL; }
size_t ncclshim_symmem_size(const ncclshim_symmem *mem) { return mem ? mem->size : 0; }
ncclshim_window_t ncclshim_symmem_window(const ncclshim_symmem *mem) {
  return mem && mem->complete ? mem->window : NULL;
}

static ncclshim_status unavailable(ncclshim_nccl *nccl, const char *who) {
  char need[16], have[16], why[256];
  const char *path = ncclshim_nccl_path(nccl);
  return ncs_fail(
      NCCLSHIM_UNAVAILABLE,
      "%s: symmetric memory needs NCCL >= %s (ncclMemAlloc and ncclCommWindowRegister with "
      "NCCL_WIN_COLL_SYMMETRIC); the loaded NCCL is %s (%s): %s",
      who,
      ncclshim_format_version(ncclshim_capability_version(NCCLSHIM_CAP_SYMMETRIC_MEMORY), need,
                              sizeof(need)),
      ncclshim_format_version(ncclshim_nccl_version(nccl), have, sizeof(have)),
      path ? path : "no file",
      ncclshim_nccl_capability_reason(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY, why, sizeof(why)));
}

static ncclshim_status check_request(ncclshim_comm *comm, size_t size, int timeout_ms,
                                     ncclshim_symmem **out, const char *who) {
  if (comm == NULL || out == NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s is NULL", who,
                    comm == NULL ? "comm" : "out");
  if (size == 0 || size > SIZE_MAX - ALIGNMENT)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: size %zu cannot be allocated", who, size);
  if (timeout_ms < 0) return ncs_negative_timeout(who, timeout_ms);
  ncclshim_comm_state state = ncclshim_comm_state_of(comm);
  if (state != NCCLSHIM_COMM_READY)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "%s: the communicator is %s; registration needs a ready one%s", who,
                    ncclshim_comm_state_name(state),
                    state == NCCLSHIM_COMM_INITIALIZING ? " (ncclshim_comm_wait first)" : "");
  if (!ncclshim_nccl_has(comm->nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY))
    return unavailable(comm->nccl, who);
  return NCCLSHIM_OK;
}

/* ncclMemAlloc of the rounded size, its address checked; NULL with the reason on failure. */
static ncclshim_status allocate(ncclshim_nccl *nccl, size_t size, void **ptr) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  void *p = NULL;
  ncclResult_t r = t->ncclMemAlloc(&p, size);
  if (r != ncclSuccess) return ncclshim_nccl_check(nccl, r, "ncclMemAlloc");
  if (p != NULL && (uintptr_t)p % ALIGNMENT == 0) {
    *ptr = p;
    return NCCLSHIM_OK;
  }
  if (p != NULL) t->ncclMemFree(p);
  return ncs_fail(NCCLSHIM_NCCL_ERROR,
                  "ncclMemAlloc(%zu bytes) returned %p, which is not aligned to %zu bytes "
                  "as a window needs",
                  size, p, ALIGNMENT);
}

/* Allocate and start the registration; the window is not looked at yet. */
static ncclshim_status begin(ncclshim_comm *comm, size_t size, cudaStream_t stream, int in_group,
                             ncclshim_symmem **out, const char *who) {
  ncclshim_status status = ncs_symmem_check_capture(stream, who);
  if (status != NCCLSHIM_OK) return status;
  ncclshim_symmem *mem = calloc(1, sizeof(*mem));
  if (mem == NULL) return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "%s: out of memory", who);
  mem->size = (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
  mem->in_group = in_group;
  mem->group_ends = atomic_load(&comm->group_ends);
  if ((status = allocate(comm->nccl, mem->size, &mem->ptr)) != NCCLSHIM_OK) {
    free(mem);
    return status;
  }
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(comm->nccl);
  mem->window = NULL; /* 2.28 leaves it untouched when it registers nothing */
  ncclResult_t r = t->ncclCommWindowRegister(comm->comm, mem->ptr, mem->size, &mem->window,
                                             NCCL_WIN_COLL_SYMMETRIC);
  if (r != ncclSuccess && r != ncclInProgress) {
    status = ncclshim_nccl_check(comm->nccl, r, "ncclCommWindowRegister");
    t->ncclMemFree(mem->ptr);
    free(mem);
    return status;
  }
  ncs_comm_ref(comm);
  mem->comm = comm;
  *out = mem;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_symmem_complete(ncclshim_symmem *mem, int timeout_ms) {
  static const char who[] = "ncclshim_symmem_complete";
  if (mem == NULL || timeout_ms < 0)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s", who,
                    mem == NULL ? "mem is NULL" : "negative timeout (no wait is unbounded)");
  if (mem->complete) return NCCLSHIM_OK;
  if (mem->in_group && mem->window == NULL &&
      atomic_load(&mem->comm->group_ends) == mem->group_ends)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "%s: the registration was queued in a group that has not ended: inside "
                    "a group the window only exists after ncclGroupEnd; call it after "
                    "ncclshim_comm_group_end",
                    who);
  ncclshim_status status = ncclshim_comm_wait(mem->comm, timeout_ms);
  if (status != NCCLSHIM_OK) return status;
  /* Done (outside a group, or after its end): a NULL window says windows do not register
   * here (comm_caps.c caches it). */
  ncs_comm_note_windows(mem->comm, mem->window != NULL);
  if (mem->window == NULL)
    return ncs_fail(NCCLSHIM_UNAVAILABLE,
                    "ncclCommWindowRegister returned success but no window: symmetric "
                    "windows do not register on this communicator (NCCL >= 2.29 gives none "
                    "where the system cannot register them: registration disabled, CUMEM "
                    "off, a transport without it; NCCL_DEBUG=WARN says more)");
  mem->complete = 1;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_symmem_alloc_in_group(ncclshim_comm *comm, size_t size,
                                               cudaStream_t stream, ncclshim_symmem **out) {
  static const char who[] = "ncclshim_symmem_alloc_in_group";
  ncclshim_status status = check_request(comm, size, 0, out, who);
  return status == NCCLSHIM_OK ? begin(comm, size, stream, 1, out, who) : status;
}

ncclshim_status ncclshim_symmem_alloc(ncclshim_comm *comm, size_t size, cudaStream_t stream,
                                      int timeout_ms, ncclshim_symmem **out) {
  static const char who[] = "ncclshim_symmem_alloc";
  ncclshim_symmem *mem = NULL;
  ncclshim_status status = check_request(comm, size, timeout_ms, out, who);
  if (status == NCCLSHIM_OK) status = begin(comm, size, stream, 0, &mem, who);
  if (status != NCCLSHIM_OK) return status;
  status = ncclshim_symmem_complete(mem, timeout_ms);
  if (status == NCCLSHIM_OK) {
    *out = mem;
  } else if (status != NCCLSHIM_TIMEOUT) {
    char first[1024];
    snprintf(first, sizeof(first), "%s", ncclshim_last_error());
    int code = ncclshim_last_nccl_result();
    if (ncclshim_symmem_free(mem, timeout_ms) == NCCLSHIM_OK)
      ncs_fail_code(status, code, "%s", first);
    else /* a window on a communicator that failed meanwhile: see ncclshim_symmem_free */
      ncs_fail_code(status, code,
                    "%s (the buffer stays allocated until the communicator is aborted)", first);
  }
  /* TIMEOUT: NCCL may still write the window into `mem` and use the memory, so both stay
   * allocated, with the communicator, until NCCL is done with it (see symmem.h). */
  if (status == NCCLSHIM_TIMEOUT) ncs_comm_adopt(comm, mem);
  return status;
}
