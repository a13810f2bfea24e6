/* Stream and event helpers: one driver call each, in the caller's current context. */
#include "cuda_helper.h"

/* ncclshim_cuda_<object>_create and _destroy: the same two calls for streams and events. */
#define CREATE_AND_DESTROY(object, type, create, destroy)                                        \
  ncclshim_status ncclshim_cuda_##object##_create(const ncclshim_cuda *cuda, unsigned int flags, \
                                                  type *object) {                                \
    BEGIN(cuda);                                                                                 \
    NOT_NULL(object);                                                                            \
    type created = NULL;                                                                         \
    CALL(cuda, create, (&created, flags));                                                       \
    *object = created;                                                                           \
    return NCCLSHIM_OK;                                                                          \
  }                                                                                              \
  ncclshim_status ncclshim_cuda_##object##_destroy(const ncclshim_cuda *cuda, type object) {     \
    BEGIN(cuda);                                                                                 \
    NOT_NULL(object);                                                                            \
    CALL(cuda, destroy, (object));                                                               \
    return NCCLSHIM_OK;                                                                          \
  }

CREATE_AND_DESTROY(stream, CUstream, cuStreamCreate, cuStreamDestroy)
CREATE_AND_DESTROY(event, CUevent, cuEventCreate, cuEventDestroy)

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

ncclshim_status ncclshim_cuda_event_record(const ncclshim_cuda *cuda, CUevent event,
                                           CUstream stream) {
  BEGIN(cuda);
  NOT_NULL(event);
  CALL(cuda, cuEventRecord, (event, stream));
  return NCCLSHIM_OK;
}
