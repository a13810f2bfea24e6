/* Registration during CUDA graph capture is refused: NCCL maps memory while registering,
 * which is not legal inside a capture (docs/field-problems.md item 35). */
#include "symmem_internal.h"

/* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: the legacy stream was asked while another stream of the
 * context captures in global mode, which counts as capturing. */
#define CAPTURE_IMPLICIT 906

ncclshim_status ncs_symmem_check_capture(cudaStream_t stream, const char *who) {
  ncclshim_cuda *cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_status(cuda) != NCCLSHIM_OK) return NCCLSHIM_OK; /* no driver bound */
  ncclshim_cu_stream_capture_status capture = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  ncclshim_cu_result rc = ncclshim_cuda_functions(cuda)->cuStreamIsCapturing(stream, &capture);
  switch (rc) {
  case NCCLSHIM_CUDA_SUCCESS:
    break;
  case CAPTURE_IMPLICIT:
    capture = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    break;
  case NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED:
  case NCCLSHIM_CUDA_ERROR_DEINITIALIZED:
  case NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT:
  case NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED:
    return NCCLSHIM_OK; /* the driver cannot tell: skipped */
  default:
    return ncs_fail(NCCLSHIM_CUDA_ERROR, "%s: cuStreamIsCapturing(%p) failed: %s (%d): %s", who,
                    (void *)stream, ncclshim_cuda_result_name(cuda, rc), rc,
                    ncclshim_cuda_result_string(cuda, rc));
  }
  if (capture == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE) return NCCLSHIM_OK;
  return ncs_fail(
      NCCLSHIM_INVALID_ARGUMENT,
      "%s: stream %p is capturing a CUDA graph%s: NCCL cannot register a window "
      "during capture (it maps memory, which a capture does not allow); "
      "allocate symmetric buffers before capturing",
      who, (void *)stream,
      capture == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED ? " (an invalidated capture)" : "");
}
