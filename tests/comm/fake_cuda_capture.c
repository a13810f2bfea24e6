/* A minimal fake libcuda.so.1 for the communicator tests, generated from ncclshim's CUDA
 * function list: driver 11.2 (bound by dlsym), every function succeeding and doing nothing,
 * except the two the tests steer through exported variables:
 *   fake_capture_result / fake_capture_status   what cuStreamIsCapturing answers and writes
 *   fake_query_result                           what cuStreamQuery answers (600: busy)
 * and the events, through functions (the watchdog's thread reads them concurrently):
 *   fake_cuda_set_event_query(result)   what cuEventQuery answers: 0 (fired), 600 (an event
 *                                       that never fires: work that never completes), or an
 *                                       error such as 719 (launch failed)
 *   fake_cuda_event_count(which)        calls of cuEventCreate (0), cuEventDestroy (1),
 *                                       cuEventRecord (2), cuEventQuery (3)
 *   fake_cuda_set_record_result(result) what cuEventRecord answers
 * cuEventCreate hands out distinct non-NULL handles; every count starts at 0. */
#include <stdatomic.h>
#include <stdint.h>

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

static atomic_int event_query_result, record_result, event_counts[4];
static atomic_uintptr_t next_event = 0x1000;

EXPORT void fake_cuda_set_event_query(int result) { atomic_store(&event_query_result, result); }
EXPORT void fake_cuda_set_record_result(int result) { atomic_store(&record_result, result); }
EXPORT int fake_cuda_event_count(int which) { return atomic_load(&event_counts[which & 3]); }

EXPORT ncclshim_cu_result cuEventCreate(CUevent *event, unsigned int flags) {
  atomic_fetch_add(&event_counts[0], 1);
  *event = (CUevent)atomic_fetch_add(&next_event, 16);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy(CUevent event) {
  atomic_fetch_add(&event_counts[1], 1);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy_v2(CUevent event) __attribute__((alias("cuEventDestroy")));
EXPORT ncclshim_cu_result cuEventRecord(CUevent event, CUstream stream) {
  atomic_fetch_add(&event_counts[2], 1);
  return atomic_load(&record_result);
}
EXPORT ncclshim_cu_result cuEventQuery(CUevent event) {
  atomic_fetch_add(&event_counts[3], 1);
  return atomic_load(&event_query_result);
}

/* Every other row, under both exported names (name and name_v2); the error-text functions
 * are left out, so ncclshim answers those from its own table. */
#define WRITTEN_cuDriverGetVersion ~, 1,
#define WRITTEN_cuStreamIsCapturing ~, 1,
#define WRITTEN_cuStreamQuery ~, 1,
#define WRITTEN_cuEventCreate ~, 1,
#define WRITTEN_cuEventDestroy ~, 1,
#define WRITTEN_cuEventRecord ~, 1,
#define WRITTEN_cuEventQuery ~, 1,
#define WRITTEN_cuGetErrorName ~, 1,
#define WRITTEN_cuGetErrorString ~, 1,
#include "fake_cuda_rest.h"
