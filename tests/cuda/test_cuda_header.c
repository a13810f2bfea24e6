/* cuda.h and ncclshim/cuda.h in either order (ORDER_CUDA_FIRST or not): both compile, the
 * shared typedefs agree, ncclshim's numbers equal cuda.h's, and table fields answer to the
 * names that cuda.h's #defines turn user code into (cuMemAlloc -> cuMemAlloc_v2). */
#ifdef ORDER_CUDA_FIRST
#include <cuda.h>

#include "ncclshim/cuda.h"
#else
#include "ncclshim/cuda.h"

#include <cuda.h>
#endif
#include <stdio.h>

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b);
SAME(CUDA_ERROR_INVALID_VALUE, NCCLSHIM_CUDA_ERROR_INVALID_VALUE)
SAME(CUDA_ERROR_NOT_INITIALIZED, NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED)
SAME(CUDA_ERROR_STUB_LIBRARY, NCCLSHIM_CUDA_ERROR_STUB_LIBRARY)
SAME(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, NCCLSHIM_CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)
SAME(CUDA_ERROR_NO_DEVICE, NCCLSHIM_CUDA_ERROR_NO_DEVICE)
SAME(CUDA_ERROR_INVALID_CONTEXT, NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT)
SAME(CUDA_ERROR_NOT_FOUND, NCCLSHIM_CUDA_ERROR_NOT_FOUND)
SAME(CUDA_ERROR_NOT_READY, NCCLSHIM_CUDA_ERROR_NOT_READY)
SAME(CUDA_ERROR_NOT_SUPPORTED, NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED)
SAME(CUDA_ERROR_UNKNOWN, NCCLSHIM_CUDA_ERROR_UNKNOWN)
SAME(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
SAME(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
SAME(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
SAME(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, NCCLSHIM_CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
SAME(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
SAME(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)
SAME(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED)
SAME(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
     NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED)
SAME(CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, NCCLSHIM_CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED)
SAME(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
SAME(CU_STREAM_NON_BLOCKING, NCCLSHIM_CU_STREAM_NON_BLOCKING)
SAME(CU_EVENT_DISABLE_TIMING, NCCLSHIM_CU_EVENT_DISABLE_TIMING)
SAME(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
     NCCLSHIM_CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
_Static_assert(sizeof(CUresult) == sizeof(ncclshim_cu_result), "CUresult size");
_Static_assert(sizeof(CUuuid) == 16 && sizeof(CUdeviceptr) == 8, "handle sizes");

int main(void) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(NULL); /* no driver: every entry 3 */
  CUdeviceptr dptr = 0;
  CUstream stream = NULL;
  CUevent event = NULL;
  CUdevice device = 0;
  CUuuid uuid;
  size_t free_bytes, total_bytes;
  float ms;
  char byte = 0;
  /* Each of these names is #defined by cuda.h (to its _v2 form). */
  int results[] = {
      t->cuMemAlloc(&dptr, 1),
      t->cuMemFree(dptr),
      t->cuMemcpyHtoD(dptr, &byte, 1),
      t->cuMemcpyDtoH(&byte, dptr, 1),
      t->cuMemsetD8(dptr, 0, 1),
      t->cuMemGetInfo(&free_bytes, &total_bytes),
      t->cuDeviceTotalMem(&total_bytes, device),
      t->cuDeviceGetUuid(&uuid, device),
      t->cuDevicePrimaryCtxRelease(device),
      t->cuStreamDestroy(stream),
      t->cuEventDestroy(event),
      t->cuEventElapsedTime(&ms, event, event),
      t->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
  };
  for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++) {
    if (results[i] != CUDA_ERROR_NOT_INITIALIZED) {
      printf("call %zu answered %d, expected %d\n", i, results[i], CUDA_ERROR_NOT_INITIALIZED);
      return 1;
    }
  }
  printf("%zu table entries called by cuda.h's names\n", sizeof(results) / sizeof(results[0]));
  return 0;
}
