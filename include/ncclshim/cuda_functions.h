/* The one list of CUDA driver functions ncclshim binds. The table, the names, the ABI
 * versions requested, loading and the "unavailable" stubs are all generated from it.
 *
 * X(name, ask, policy, abi, nparams, ((type, name), ...))
 *   ask     the cudaVersion passed to cuGetProcAddress: the release in which the signature
 *           written here appeared (cudaTypedefs.h's PFN_<name>_v<ask>). Never the driver's own
 *           version: a newer driver would hand back a newer ABI with other parameters
 *           (cuCtxGetDevice at 13000 takes a CUcontext too). A driver older than `ask` does
 *           not get asked; the function is unavailable on it.
 *   policy  REQUIRED: a driver without it is refused (VERSION_TOO_OLD when its version is
 *           below `ask`, else MISSING_SYMBOLS); OPTIONAL: missing makes it unavailable
 *   abi     BASE or V2: the exported name of that ABI (name or name_v2), which drivers from
 *           before cuGetProcAddress (< 11.3) are searched for with dlsym; it is also the name
 *           cuda.h's #define gives the function
 * Every function returns a CUresult (ncclshim_cu_result). The table holds the
 * legacy-default-stream variants (cuGetProcAddress flags 0). */
#ifndef NCCLSHIM_CUDA_FUNCTIONS_H
#define NCCLSHIM_CUDA_FUNCTIONS_H

#include "ncclshim/cuda_abi.h"
#include "ncclshim/pp.h"

/* clang-format off */
#define NCCLSHIM_CUDA_FUNCTIONS(X) \
  X(cuInit,                     2000, REQUIRED, BASE, 1, ((unsigned int, flags))) \
  X(cuDriverGetVersion,         2020, REQUIRED, BASE, 1, ((int *, driverVersion))) \
  X(cuDeviceGetCount,           2000, REQUIRED, BASE, 1, ((int *, count))) \
  X(cuDeviceGet,                2000, REQUIRED, BASE, 2, ((CUdevice *, device), (int, ordinal))) \
  X(cuDeviceGetName,            2000, REQUIRED, BASE, 3, ((char *, name), (int, len), (CUdevice, dev))) \
  X(cuDeviceGetAttribute,       2000, REQUIRED, BASE, 3, ((int *, pi), (ncclshim_cu_device_attribute, attrib), (CUdevice, dev))) \
  X(cuDeviceTotalMem,           3020, REQUIRED, V2,   2, ((size_t *, bytes), (CUdevice, dev))) \
  X(cuDeviceGetUuid,           11040, OPTIONAL, V2,   2, ((CUuuid *, uuid), (CUdevice, dev))) \
  X(cuDevicePrimaryCtxRetain,   7000, REQUIRED, BASE, 2, ((CUcontext *, pctx), (CUdevice, dev))) \
  X(cuDevicePrimaryCtxRelease, 11000, REQUIRED, V2,   1, ((CUdevice, dev))) \
  X(cuCtxSetCurrent,            4000, REQUIRED, BASE, 1, ((CUcontext, ctx))) \
  X(cuCtxGetCurrent,            4000, REQUIRED, BASE, 1, ((CUcontext *, pctx))) \
  X(cuCtxGetDevice,             2000, REQUIRED, BASE, 1, ((CUdevice *, device))) \
  X(cuCtxSynchronize,           2000, REQUIRED, BASE, 0, ()) \
  X(cuStreamCreate,             2000, REQUIRED, BASE, 2, ((CUstream *, phStream), (unsigned int, flags))) \
  X(cuStreamDestroy,            4000, REQUIRED, V2,   1, ((CUstream, hStream))) \
  X(cuStreamSynchronize,        2000, REQUIRED, BASE, 1, ((CUstream, hStream))) \
  X(cuStreamQuery,              2000, REQUIRED, BASE, 1, ((CUstream, hStream))) \
  X(cuStreamWaitEvent,          3020, REQUIRED, BASE, 3, ((CUstream, hStream), (CUevent, hEvent), (unsigned int, flags))) \
  X(cuStreamIsCapturing,       10000, OPTIONAL, BASE, 2, ((CUstream, hStream), (ncclshim_cu_stream_capture_status *, captureStatus))) \
  X(cuEventCreate,              2000, REQUIRED, BASE, 2, ((CUevent *, phEvent), (unsigned int, flags))) \
  X(cuEventDestroy,             4000, REQUIRED, V2,   1, ((CUevent, hEvent))) \
  X(cuEventRecord,              2000, REQUIRED, BASE, 2, ((CUevent, hEvent), (CUstream, hStream))) \
  X(cuEventQuery,               2000, REQUIRED, BASE, 1, ((CUevent, hEvent))) \
  X(cuEventSynchronize,         2000, REQUIRED, BASE, 1, ((CUevent, hEvent))) \
  X(cuEventElapsedTime,        12080, REQUIRED, V2,   3, ((float *, pMilliseconds), (CUevent, hStart), (CUevent, hEnd))) \
  X(cuMemAlloc,                 3020, REQUIRED, V2,   2, ((CUdeviceptr *, dptr), (size_t, bytesize))) \
  X(cuMemFree,                  3020, REQUIRED, V2,   1, ((CUdeviceptr, dptr))) \
  X(cuMemcpyHtoD,               3020, REQUIRED, V2,   3, ((CUdeviceptr, dstDevice), (const void *, srcHost), (size_t, byteCount))) \
  X(cuMemcpyDtoH,               3020, REQUIRED, V2,   3, ((void *, dstHost), (CUdeviceptr, srcDevice), (size_t, byteCount))) \
  X(cuMemsetD8,                 3020, REQUIRED, V2,   3, ((CUdeviceptr, dstDevice), (unsigned char, value), (size_t, count))) \
  X(cuMemGetInfo,               3020, REQUIRED, V2,   2, ((size_t *, freeBytes), (size_t *, totalBytes))) \
  X(cuPointerGetAttribute,      4000, REQUIRED, BASE, 3, ((void *, data), (ncclshim_cu_pointer_attribute, attribute), (CUdeviceptr, ptr))) \
  X(cuDeviceCanAccessPeer,      4000, REQUIRED, BASE, 3, ((int *, canAccessPeer), (CUdevice, dev), (CUdevice, peerDev))) \
  X(cuGetErrorName,             6000, OPTIONAL, BASE, 2, ((ncclshim_cu_result, error), (const char **, pStr))) \
  X(cuGetErrorString,           6000, OPTIONAL, BASE, 2, ((ncclshim_cu_result, error), (const char **, pStr))) \
  X(cuThreadExchangeStreamCaptureMode, 10010, OPTIONAL, BASE, 1, ((int *, mode))) \
  X(cuStreamGetCtx,             9020, OPTIONAL, BASE, 2, ((CUstream, hStream), (CUcontext *, pctx))) \
  X(cuMemcpyHtoDAsync,          3020, OPTIONAL, V2,   4, ((CUdeviceptr, dstDevice), (const void *, srcHost), (size_t, byteCount), (CUstream, hStream))) \
  X(cuMemcpyDtoHAsync,          3020, OPTIONAL, V2,   4, ((void *, dstHost), (CUdeviceptr, srcDevice), (size_t, byteCount), (CUstream, hStream)))

/* Older ABIs with the same signature, asked for instead when the driver is older than the
 * list's `ask`: X(name, ask, abi). (cuEventElapsedTime_v2 appeared in 12.8; the 2.0 ABI takes
 * the same arguments.) */
#define NCCLSHIM_CUDA_OLDER_ABIS(X) \
  X(cuEventElapsedTime,         2000, BASE)
/* clang-format on */

/* The function-pointer type of one row: NCCLSHIM_CUDA_PFN(cuMemAlloc). */
#define NCCLSHIM_CUDA_PFN(name) ncclshim_cuda_pfn_##name
#define NCCLSHIM_CUDA_DECLARE_PFN_(name, ask, policy, abi, n, params) \
  typedef ncclshim_cu_result(*ncclshim_cuda_pfn_##name) NCCLSHIM_PP_PARAMS(n, params);
NCCLSHIM_CUDA_FUNCTIONS(NCCLSHIM_CUDA_DECLARE_PFN_)

/* One index per function: NCCLSHIM_CUDA_FN_cuMemAlloc. */
#define NCCLSHIM_CUDA_ENUM_(name, ask, policy, abi, n, params) NCCLSHIM_CUDA_FN_##name,
enum ncclshim_cuda_function {
  NCCLSHIM_CUDA_FUNCTIONS(NCCLSHIM_CUDA_ENUM_) NCCLSHIM_CUDA_FUNCTION_COUNT
};

#endif /* NCCLSHIM_CUDA_FUNCTIONS_H */
