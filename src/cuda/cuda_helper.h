/* The shape every helper shares: checks first, one driver call at a time, out-parameters
 * written only after the calls succeeded. For the helpers' sources only. */
#ifndef NCCLSHIM_CUDA_HELPER_H
#define NCCLSHIM_CUDA_HELPER_H

#include "src/internal.h"
#include "cuda_handle.h"

/* Start a helper: the checks every helper makes. */
#define BEGIN(cuda)                                                  \
  do {                                                               \
    ncclshim_status begin_status_ = ncs_cuda_usable(cuda, __func__); \
    if (begin_status_ != NCCLSHIM_OK) return begin_status_;          \
  } while (0)

#define NOT_NULL(pointer)                                                               \
  do {                                                                                  \
    if ((pointer) == NULL)                                                              \
      return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s is NULL", __func__, #pointer); \
  } while (0)

#define VALID_ORDINAL(ordinal)                                                                  \
  do {                                                                                          \
    if ((ordinal) < 0)                                                                          \
      return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: device ordinal %d is negative", __func__, \
                      ordinal);                                                                 \
  } while (0)

/* Call driver function `fn`; if it fails, return the failure from the helper. */
#define CALL(cuda, fn, args)                                                        \
  do {                                                                              \
    ncclshim_cu_result call_rc_ = (cuda)->table.fn args;                            \
    if (call_rc_ != NCCLSHIM_CUDA_SUCCESS)                                          \
      return ncs_cuda_call_failed(cuda, __func__, NCCLSHIM_CUDA_FN_##fn, call_rc_); \
  } while (0)

#endif
