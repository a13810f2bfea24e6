/* What every helper checks first, and how a failed driver call is reported. */
#include <unistd.h>

#include "src/internal.h"
#include "cuda_handle.h"

ncclshim_status ncs_cuda_usable(const ncclshim_cuda *cuda, const char *what) {
  if (cuda == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the CUDA handle is NULL", what);
  if (cuda->core.status != NCCLSHIM_OK)
    return ncs_fail(NCCLSHIM_DRIVER_UNAVAILABLE, "%s: no usable CUDA driver (%s)", what,
                    ncclshim_cuda_message(cuda));
  /* The driver answers a forked child with CUDA_ERROR_NOT_INITIALIZED, the same code as
   * "forgot cuInit"; the pid recorded by ncclshim_cuda_init tells the two apart. */
  int parent = __atomic_load_n(&cuda->init_pid, __ATOMIC_ACQUIRE);
  int self = (int)getpid();
  if (parent != 0 && parent != self)
    return ncs_fail(NCCLSHIM_FORKED,
                    "%s: CUDA was initialised in process %d and this is process %d, forked "
                    "after it: a child cannot use its parent's CUDA state. Initialise CUDA "
                    "only after fork() (ncclshim_cuda_init in each child), or start workers "
                    "with posix_spawn/exec",
                    what, parent, self);
  return NCCLSHIM_OK;
}

ncclshim_status ncs_cuda_call_failed(const ncclshim_cuda *cuda, const char *what,
                                     enum ncclshim_cuda_function fn, ncclshim_cu_result result) {
  ncclshim_status status = result == NCCLSHIM_CUDA_ERROR_STUB_LIBRARY ? NCCLSHIM_DRIVER_UNAVAILABLE
                           : result == NCCLSHIM_CUDA_ERROR_NO_DEVICE  ? NCCLSHIM_NO_DEVICE
                                                                      : NCCLSHIM_CUDA_ERROR;
  const char *hint = result == NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED &&
                             __atomic_load_n(&cuda->init_pid, __ATOMIC_ACQUIRE) == 0
                         ? " (ncclshim_cuda_init has not been called through this handle)"
                         : "";
  return ncs_fail(status, "%s: %s failed: %s (%d): %s%s", what, ncclshim_cuda_function_name(fn),
                  ncclshim_cuda_result_name(cuda, result), result,
                  ncclshim_cuda_result_string(cuda, result), hint);
}
