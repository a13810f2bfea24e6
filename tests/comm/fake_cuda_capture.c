/* A minimal fake libcuda.so.1 for the communicator tests, generated from ncclshim's CUDA
 * function list: driver 11.2 (bound by dlsym), every function succeeding and doing nothing,
 * except the two the tests steer through exported variables:
 *   fake_capture_result / fake_capture_status   what cuStreamIsCapturing answers and writes
 *   fake_query_result                           what cuStreamQuery answers (600: busy) */
#include "ncclshim/cuda_functions.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))

EXPORT int fake_capture_result, fake_capture_status, fake_query_result;

EXPORT ncclshim_cu_result cuDriverGetVersion(int *version) {
  *version = 11020;
  return NCCLSHIM_CUDA_SUCCESS;
}

EXPORT ncclshim_cu_result cuStreamIsCapturing(CUstream stream, int *status) {
  if (fake_capture_result == NCCLSHIM_CUDA_SUCCESS) *status = fake_capture_status;
  return fake_capture_result;
}

EXPORT ncclshim_cu_result cuStreamQuery(CUstream stream) { return fake_query_result; }

/* Every other row, under both exported names (name and name_v2); the error-text functions
 * are left out, so ncclshim answers those from its own table. */
#define WRITTEN_cuDriverGetVersion ~, 1,
#define WRITTEN_cuStreamIsCapturing ~, 1,
#define WRITTEN_cuStreamQuery ~, 1,
#define WRITTEN_cuGetErrorName ~, 1,
#define WRITTEN_cuGetErrorString ~, 1,
#define SECOND(a, b, ...) b
#define SECOND_(...) SECOND(__VA_ARGS__)
#define IS_WRITTEN(name) SECOND_(WRITTEN_##name, 0, ~)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define GENERATE_0(name, ask, policy, abi, n, params)                        \
  EXPORT ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) { return 0; } \
  EXPORT ncclshim_cu_result name##_v2 NCCLSHIM_PP_PARAMS(n, params) __attribute__((alias(#name)));
#define GENERATE_1(...)
#define GENERATE_(name, ...) CAT(GENERATE_, IS_WRITTEN(name))(name, __VA_ARGS__)
NCCLSHIM_CUDA_FUNCTIONS(GENERATE_)
