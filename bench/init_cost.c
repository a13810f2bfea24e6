/* From nothing to a usable NCCL table, in this fresh process, one way per run:
 *   raw PATH    dlopen + ncclGetVersion + dlsym of every name of ncclshim's list
 *   shim PATH   ncclshim_nccl_open with that path (ELF check, version, bind, capabilities)
 * Before the clock starts, each way makes one failed attempt on a file that does not exist, so
 * that the code it runs is paged in and the time is the work, not first-touch page faults
 * of ncclshim's own code (which a VM can make expensive).
 * Prints CSV: way,library,microseconds. Then shows that loading called no cuInit: with a real
 * driver, cuDeviceGetCount through ncclshim's CUDA table still answers
 * CUDA_ERROR_NOT_INITIALIZED (3). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "raw") != 0 && strcmp(argv[1], "shim") != 0)) {
    fprintf(stderr, "usage: %s raw|shim LIBRARY\n", argv[0]);
    return 2;
  }
  int bound = 0;
  int raw = strcmp(argv[1], "raw") == 0;
  ncclshim_nccl_options warm = NCCLSHIM_NCCL_OPTIONS_INIT;
  warm.path = "/nonexistent/libnccl.so.2";
  ncclshim_nccl *cold = NULL;
  if (raw)
    dlopen(warm.path, RTLD_NOW | RTLD_LOCAL);
  else
    ncclshim_nccl_open(&warm, &cold);
  ncclshim_nccl_close(cold);
  double t0 = now_us();
  if (raw) {
    void *handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) return 1;
    int version = 0;
    ncclResult_t (*get)(int *) = (ncclResult_t(*)(int *))(uintptr_t)dlsym(handle, "ncclGetVersion");
    if (get == NULL || get(&version) != ncclSuccess) return 1;
    for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
      bound += dlsym(handle, ncclshim_nccl_function_name(fn)) != NULL;
  } else {
    ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
    options.path = argv[2];
    ncclshim_nccl *nccl = NULL;
    if (ncclshim_nccl_open(&options, &nccl) != NCCLSHIM_OK) return 1;
    for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
      bound += ncclshim_nccl_has_function(nccl, fn);
  }
  double t1 = now_us();
  printf("%s,%s,%.1f\n", argv[1], argv[2], t1 - t0);

  ncclshim_cuda *cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_status(cuda) == NCCLSHIM_OK) {
    int count = -1;
    int result = ncclshim_cuda_functions(cuda)->cuDeviceGetCount(&count);
    fprintf(stderr, "cuDeviceGetCount after loading: %d (%s): %s\n", result,
            ncclshim_cuda_result_name(cuda, result),
            result == 3 ? "nothing called cuInit" : "cuInit was called");
  }
  fprintf(stderr, "%d functions bound\n", bound);
  return 0;
}
