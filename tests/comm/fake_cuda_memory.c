/* A fake libcuda.so.1 whose "device" memory is host memory, for ncclshim_comm_agree on the
 * fakes: cuMemAlloc mallocs, cuMemFree frees, cuMemcpyHtoD/DtoH copy, cuStreamCreate hands
 * out a stream, everything else succeeds doing nothing. fake_cuda_live_allocations counts
 * the blocks not yet freed, fake_cuda_free_all frees them (single-threaded tests only). Driver 11.2
 * (bound by dlsym). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/cuda_functions.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))
#define ALIAS(name) __attribute__((alias(#name)))

enum { BLOCKS = 64 };
static atomic_int allocations;
static void *blocks[BLOCKS]; /* those not yet freed, for fake_cuda_free_all */
static int stream_token;

EXPORT int fake_cuda_live_allocations(void) { return atomic_load(&allocations); }
/* What a test left allocated on purpose (a timed-out agreement's buffers). */
EXPORT void fake_cuda_free_all(void) {
  for (int i = 0; i < BLOCKS; i++) {
    if (blocks[i] != NULL) atomic_fetch_sub(&allocations, 1);
    free(blocks[i]);
    blocks[i] = NULL;
  }
}

static void track(void *from, void *to) {
  for (int i = 0; i < BLOCKS; i++) {
    if (blocks[i] == from) {
      blocks[i] = to;
      return;
    }
  }
}

EXPORT ncclshim_cu_result cuDriverGetVersion(int *version) {
  *version = 11020;
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuStreamCreate(CUstream *stream, unsigned int flags) {
  *stream = (CUstream)(void *)&stream_token;
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuMemAlloc(CUdeviceptr *ptr, size_t size) {
  void *p = malloc(size);
  if (p == NULL) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  atomic_fetch_add(&allocations, 1);
  track(NULL, p);
  *ptr = (CUdeviceptr)(uintptr_t)p;
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuMemAlloc_v2(CUdeviceptr *ptr, size_t size) ALIAS(cuMemAlloc);
EXPORT ncclshim_cu_result cuMemFree(CUdeviceptr ptr) {
  if (ptr) atomic_fetch_sub(&allocations, 1);
  track((void *)(uintptr_t)ptr, NULL);
  free((void *)(uintptr_t)ptr);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuMemFree_v2(CUdeviceptr ptr) ALIAS(cuMemFree);
EXPORT ncclshim_cu_result cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t size) {
  memcpy((void *)(uintptr_t)dst, src, size);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t size)
    ALIAS(cuMemcpyHtoD);
EXPORT ncclshim_cu_result cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t size) {
  memcpy(dst, (const void *)(uintptr_t)src, size);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t size)
    ALIAS(cuMemcpyDtoH);

/* Every other row, under both exported names; the error-text functions are left out. */
#define WRITTEN_cuDriverGetVersion ~, 1,
#define WRITTEN_cuStreamCreate ~, 1,
#define WRITTEN_cuMemAlloc ~, 1,
#define WRITTEN_cuMemFree ~, 1,
#define WRITTEN_cuMemcpyHtoD ~, 1,
#define WRITTEN_cuMemcpyDtoH ~, 1,
#define WRITTEN_cuGetErrorName ~, 1,
#define WRITTEN_cuGetErrorString ~, 1,
#include "fake_cuda_rest.h"
