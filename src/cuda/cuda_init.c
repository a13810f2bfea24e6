/* cuInit, explicitly: loading never calls it, so a process may load the driver, read its
 * version and still fork workers that use CUDA. */
#include <unistd.h>

#include "src/internal.h"
#include "cuda_handle.h"

ncclshim_status ncclshim_cuda_init(ncclshim_cuda *cuda) {
  static const char what[] = "ncclshim_cuda_init";
  ncclshim_status status = ncs_cuda_usable(cuda, what);
  if (status != NCCLSHIM_OK) return status;
  int self = (int)getpid();
  if (__atomic_load_n(&cuda->init_pid, __ATOMIC_ACQUIRE) == self) return NCCLSHIM_OK;

  /* Racing callers may both call cuInit(0): the driver allows repeating it. */
  ncclshim_cu_result rc = cuda->table.cuInit(0);
  switch (rc) {
  case NCCLSHIM_CUDA_SUCCESS:
    __atomic_store_n(&cuda->init_pid, self, __ATOMIC_RELEASE);
    return NCCLSHIM_OK;
  case NCCLSHIM_CUDA_ERROR_STUB_LIBRARY:
    __atomic_store_n(&cuda->is_stub, 1, __ATOMIC_RELAXED);
    return ncs_fail(NCCLSHIM_DRIVER_UNAVAILABLE,
                    "%s: %s is the CUDA toolkit's stub library, not a CUDA driver: cuInit "
                    "answered CUDA_ERROR_STUB_LIBRARY (34)",
                    what, cuda->core.path);
  case NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED:
    return ncs_fail(NCCLSHIM_CUDA_ERROR,
                    "%s: cuInit failed: CUDA_ERROR_NOT_INITIALIZED (3): this is what the "
                    "driver answers in a child forked after any component of its parent "
                    "called cuInit; a forked child cannot use CUDA",
                    what);
  default:
    return ncs_cuda_call_failed(cuda, what, NCCLSHIM_CUDA_FN_cuInit, rc);
  }
}
