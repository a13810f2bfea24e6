/* Symmetric memory: buffers from ncclMemAlloc registered as NCCL_WIN_COLL_SYMMETRIC windows on
 * a communicator, so that NCCL 2.28+ can run its symmetric kernels on them.
 *
 *   ncclshim_symmem *buf = NULL;
 *   if (ncclshim_symmem_alloc(comm, bytes, stream, 10000, &buf) == NCCLSHIM_OK) {
 *     float *p = ncclshim_symmem_ptr(buf);   // device memory, same size on every rank
 *     ... collectives on p ...
 *   }
 *   ncclshim_symmem_free(buf, 10000);        // NULL (a failed alloc) is fine
 *
 * Allocation and free are collective: every rank of the communicator makes the same calls in
 * the same order with the same size (NCCL exchanges the mappings and synchronises). The
 * handle gives NCCL's quirks (docs/nccl-abi.md section 8) one place:
 *  - it needs the SYMMETRIC_MEMORY capability (NCCL >= 2.28 with ncclMemAlloc and the window
 *    functions); on an older NCCL the allocation is refused before anything is allocated;
 *  - the size is rounded up to NCCL_WIN_REQUIRED_ALIGNMENT (4096) and the address checked;
 *  - the window is preset to NULL and "ncclSuccess with a NULL window" (registration disabled,
 *    cuMem off, a system that cannot register) is a failure with a clear message;
 *  - a registration that NCCL finishes later (non-blocking communicator, or made inside
 *    ncclGroupStart/End) is finished before the window is read;
 *  - registration while `stream` is capturing a CUDA graph is refused (cuStreamIsCapturing);
 *    when no CUDA driver is bound through ncclshim_cuda_default(), or it cannot answer, that
 *    check is skipped;
 *  - free deregisters the window before freeing the memory.
 * Not thread-safe with other calls on the same buffer or communicator. */
#ifndef NCCLSHIM_SYMMEM_H
#define NCCLSHIM_SYMMEM_H

#include "ncclshim/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclshim_symmem ncclshim_symmem;

/* Allocate at least `size` bytes with ncclMemAlloc (rounded up to a multiple of 4096) and
 * register them as a symmetric window on `comm`, waiting at most timeout_ms for NCCL to
 * finish the registration on a non-blocking communicator. Not for use inside
 * ncclGroupStart/End: use ncclshim_symmem_alloc_in_group there. `stream` is the stream the
 * buffer will be used on (NULL: the legacy default stream), checked for graph capture.
 * Returns OK with *out set; INVALID_ARGUMENT (comm or out NULL, size 0 or too large,
 * timeout_ms < 0, the communicator not READY, the stream capturing: "... is capturing a CUDA
 * graph ..."); UNAVAILABLE (no SYMMETRIC_MEMORY: "needs NCCL >= 2.28.0 ...; the loaded NCCL
 * is 2.27.3 (path)"; or NCCL gave success with a NULL window: windows do not register on
 * this communicator, see ncclshim_comm_has); NCCL_ERROR (ncclMemAlloc or
 * ncclCommWindowRegister failed, checked message); TIMEOUT; CUDA_ERROR (cuStreamIsCapturing failed
 * with an unexpected code); OUT_OF_MEMORY. On failure everything taken is given back; after a
 * TIMEOUT only once NCCL is done with the communicator (NCCL may still write the window and
 * use the memory): when its ncclshim_comm_abort has returned or its destroy has succeeded.
 * A communicator freed without either keeps them, as it keeps NCCL's communicator. */
NCCLSHIM_API ncclshim_status ncclshim_symmem_alloc(ncclshim_comm *comm, size_t size,
                                                   cudaStream_t stream, int timeout_ms,
                                                   ncclshim_symmem **out);

/* The same, between the caller's ncclGroupStart and ncclGroupEnd: NCCL only queues the
 * registration, and fills the window at group end. The buffer's memory is usable at once,
 * its window not yet: after ncclGroupEnd (ncclshim_comm_group_end) call
 * ncclshim_symmem_complete. Same returns, without TIMEOUT. */
NCCLSHIM_API ncclshim_status ncclshim_symmem_alloc_in_group(ncclshim_comm *comm, size_t size,
                                                            cudaStream_t stream,
                                                            ncclshim_symmem **out);

/* Finish a registration: wait (at most timeout_ms) for a non-blocking communicator, then
 * check that NCCL gave a window. OK (also when already complete); UNAVAILABLE ("... returned
 * success but no window ..."; the buffer stays allocated: free it); TIMEOUT;
 * INVALID_ARGUMENT (NULL, timeout_ms < 0, the communicator no longer usable, or a
 * registration made in a group before ncclshim_comm_group_end has ended it: "... call it
 * after ncclshim_comm_group_end"); a FAILED communicator's failure, as ncclshim_comm_wait. */
NCCLSHIM_API ncclshim_status ncclshim_symmem_complete(ncclshim_symmem *mem, int timeout_ms);

/* The device address (4096-aligned); NULL for NULL. */
NCCLSHIM_API void *ncclshim_symmem_ptr(const ncclshim_symmem *mem);
/* The size allocated and registered: the size asked for rounded up to 4096; 0 for NULL. */
NCCLSHIM_API size_t ncclshim_symmem_size(const ncclshim_symmem *mem);
/* The window once the registration is complete; NULL before that and for NULL. */
NCCLSHIM_API ncclshim_window_t ncclshim_symmem_window(const ncclshim_symmem *mem);

/* Deregister the window (collective; waits at most timeout_ms on a non-blocking
 * communicator), then ncclMemFree, then release the handle. When the communicator was
 * aborted or destroyed meanwhile there is nothing to deregister and only the memory is
 * freed. OK; NULL is OK (so is the NULL a failed allocation leaves). If deregistration
 * fails (NCCL_ERROR, TIMEOUT) nothing is freed, since NCCL may still use the memory: the
 * handle stays valid, and a later free tries again (abort the communicator to give up on
 * deregistering). If only ncclMemFree fails, the handle is released all the same and
 * NCCL_ERROR reports the leak. INVALID_ARGUMENT for timeout_ms < 0. */
NCCLSHIM_API ncclshim_status ncclshim_symmem_free(ncclshim_symmem *mem, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_SYMMEM_H */
