/* A fake libcuda.so.1 for the recorder's capture mark and hang dump, generated from
 * ncclshim's CUDA function list (driver 11.2, bound by dlsym). Streams are told apart by
 * their value (tests/dropin/cuda_job.c):
 *   FAKE_CAPTURING_STREAM  capturing into a graph (cuStreamIsCapturing says ACTIVE)
 *   FAKE_HELD_STREAM       held: an event recorded on it never completes (cuEventQuery 600)
 *   FAKE_HELD_STREAM_2     held as well
 *   FAKE_LATE_STREAM       held from its second event on: the first completes
 * every other stream is idle: its events complete at once. fake_cuda_events_recorded() counts
 * cuEventRecord calls, fake_cuda_events_live() the events created and not destroyed,
 * fake_cuda_events_capture_mode() the capture mode last set (-1: none). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "fake_cuda_events.h"
#include "ncclshim/cuda_functions.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))

static atomic_int recorded, recorded_late, live, capture_mode = -1;

EXPORT int fake_cuda_events_recorded(void) { return atomic_load(&recorded); }
EXPORT int fake_cuda_events_live(void) { return atomic_load(&live); }
EXPORT int fake_cuda_events_capture_mode(void) { return atomic_load(&capture_mode); }

/* Keeps the mode last asked for (-1: never asked), answers "global" as the one before. */
EXPORT ncclshim_cu_result cuThreadExchangeStreamCaptureMode(int *mode) {
  atomic_store(&capture_mode, *mode);
  *mode = 0; /* CU_STREAM_CAPTURE_MODE_GLOBAL */
  return NCCLSHIM_CUDA_SUCCESS;
}

EXPORT ncclshim_cu_result cuDriverGetVersion(int *version) {
  *version = 11020;
  return NCCLSHIM_CUDA_SUCCESS;
}

EXPORT ncclshim_cu_result cuStreamIsCapturing(CUstream stream, int *status) {
  *status = (uintptr_t)stream == FAKE_CAPTURING_STREAM ? NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE
                                                       : NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  return NCCLSHIM_CUDA_SUCCESS;
}

typedef struct fake_event {
  atomic_int held; /* as recorded last */
} fake_event;

EXPORT ncclshim_cu_result cuEventCreate(CUevent *event, unsigned int flags) {
  fake_event *e = calloc(1, sizeof(*e));
  if (e == NULL) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  atomic_fetch_add(&live, 1);
  *event = (CUevent)e;
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy(CUevent event) {
  atomic_fetch_sub(&live, 1);
  free(event);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy_v2(CUevent event) __attribute__((alias("cuEventDestroy")));
EXPORT ncclshim_cu_result cuEventRecord(CUevent event, CUstream stream) {
  atomic_fetch_add(&recorded, 1);
  uintptr_t on = (uintptr_t)stream;
  int held = on == FAKE_HELD_STREAM || on == FAKE_HELD_STREAM_2 ||
             (on == FAKE_LATE_STREAM && atomic_fetch_add(&recorded_late, 1) > 0);
  atomic_store(&((fake_event *)event)->held, held);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventQuery(CUevent event) {
  return atomic_load(&((fake_event *)event)->held) ? NCCLSHIM_CUDA_ERROR_NOT_READY
                                                   : NCCLSHIM_CUDA_SUCCESS;
}

#define WRITTEN_cuDriverGetVersion ~, 1,
#define WRITTEN_cuStreamIsCapturing ~, 1,
#define WRITTEN_cuEventCreate ~, 1,
#define WRITTEN_cuEventDestroy ~, 1,
#define WRITTEN_cuEventRecord ~, 1,
#define WRITTEN_cuEventQuery ~, 1,
#define WRITTEN_cuThreadExchangeStreamCaptureMode ~, 1,
#include "../comm/fake_cuda_rest.h"
