/* Device helpers: how many, and a device's primary context made current or released. */
#include "cuda_helper.h"

ncclshim_status ncclshim_cuda_device_count(const ncclshim_cuda *cuda, int *count) {
  BEGIN(cuda);
  NOT_NULL(count);
  int n = 0;
  CALL(cuda, cuDeviceGetCount, (&n));
  *count = n;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_device_activate(const ncclshim_cuda *cuda, int ordinal,
                                              CUcontext *ctx) {
  BEGIN(cuda);
  VALID_ORDINAL(ordinal);
  CUdevice device;
  CUcontext primary = NULL;
  CALL(cuda, cuDeviceGet, (&device, ordinal));
  CALL(cuda, cuDevicePrimaryCtxRetain, (&primary, device));
  /* Retaining does not make it current. */
  ncclshim_cu_result rc = cuda->table.cuCtxSetCurrent(primary);
  if (rc != NCCLSHIM_CUDA_SUCCESS) {
    cuda->table.cuDevicePrimaryCtxRelease(device);
    return ncs_cuda_call_failed(cuda, __func__, NCCLSHIM_CUDA_FN_cuCtxSetCurrent, rc);
  }
  if (ctx != NULL) *ctx = primary;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_cuda_device_release(const ncclshim_cuda *cuda, int ordinal) {
  BEGIN(cuda);
  VALID_ORDINAL(ordinal);
  CUdevice device;
  CALL(cuda, cuDeviceGet, (&device, ordinal));
  CALL(cuda, cuDevicePrimaryCtxRelease, (device));
  return NCCLSHIM_OK;
}
