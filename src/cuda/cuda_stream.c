/* Stream and event helpers: one driver call each, in the caller's current context. */
#include "cuda_helper.h"

ncclshim_status ncclshim_cuda_stream_create(const ncclshim_cuda *cuda, unsigned int flags,
                                            CUstream *stream) {
  BEGIN(cuda);
  NOT_NULL(stream);
  CUstream created = NULL;
  CALL(cuda, cuStreamCreate, (&created, flags));
  *stream = created;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_stream_destroy(const ncclshim_cuda *cuda, CUstream stream) {
  BEGIN(cuda);
  NOT_NULL(stream);
  CALL(cuda, cuStreamDestroy, (stream));
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_stream_query(const ncclshim_cuda *cuda, CUstream stream, int *ready) {
  BEGIN(cuda);
  NOT_NULL(ready);
  ncclshim_cu_result rc = cuda->table.cuStreamQuery(stream);
  if (rc != NCCLSHIM_CUDA_SUCCESS && rc != NCCLSHIM_CUDA_ERROR_NOT_READY)
    return ncs_cuda_call_failed(cuda, __func__, NCCLSHIM_CUDA_FN_cuStreamQuery, rc);
  *ready = rc == NCCLSHIM_CUDA_SUCCESS; /* NOT_READY: work pending, which is no error */
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_stream_synchronize(const ncclshim_cuda *cuda, CUstream stream) {
  BEGIN(cuda);
  CALL(cuda, cuStreamSynchronize, (stream));
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_stream_wait_event(const ncclshim_cuda *cuda, CUstream stream,
                                                CUevent event) {
  BEGIN(cuda);
  NOT_NULL(event);
  CALL(cuda, cuStreamWaitEvent, (stream, event, NCCLSHIM_CU_EVENT_WAIT_DEFAULT));
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_event_create(const ncclshim_cuda *cuda, unsigned int flags,
                                           CUevent *event) {
  BEGIN(cuda);
  NOT_NULL(event);
  CUevent created = NULL;
  CALL(cuda, cuEventCreate, (&created, flags));
  *event = created;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_event_destroy(const ncclshim_cuda *cuda, CUevent event) {
  BEGIN(cuda);
  NOT_NULL(event);
  CALL(cuda, cuEventDestroy, (event));
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_event_record(const ncclshim_cuda *cuda, CUevent event,
                                           CUstream stream) {
  BEGIN(cuda);
  NOT_NULL(event);
  CALL(cuda, cuEventRecord, (event, stream));
  return NCCLSHIM_OK;
}
