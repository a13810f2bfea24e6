/* A minimal fake libcuda.so.1 for the communicator tests, generated from ncclshim's CUDA
 * function list: driver 11.2 (bound by dlsym), every function succeeding and doing nothing,
 * except those the tests steer, through exported variables:
 *   fake_capture_result / fake_capture_status   what cuStreamIsCapturing answers and writes
 *                                               for a stream without a capture of its own
 *   fake_query_result                           what cuStreamQuery answers (600: busy)
 * and, for the watchdog (whose thread calls concurrently), through functions:
 *   fake_cuda_set_event_query(result)   what an event recorded from now on answers to
 *                                       cuEventQuery: 0 (fired), 600 (never fires: work that
 *                                       never completes), or an error such as 719
 *   fake_cuda_set_stream_answer(s, r)   what an event recorded on stream s from now on
 *                                       answers, instead (-1: the common answer again;
 *                                       fake_cuda_reset_stream_answers: all of them)
 *   fake_cuda_complete_all()            every event recorded so far fires (answers 0)
 *   fake_cuda_event_count(which)        calls of cuEventCreate (0), cuEventDestroy (1),
 *                                       cuEventRecord (2), cuEventQuery (3)
 *   fake_cuda_set_record_result(result) what cuEventRecord answers
 *   fake_cuda_set_capture(stream, status, mode)  a capture of that stream: status 1
 *                                       active, 2 invalidated, 0 ended; mode as
 *                                       cuStreamBeginCapture takes it (0 global, 1 thread-local)
 *   fake_cuda_end_captures()            every capture ends
 *   fake_cuda_capture_on_record(stream) the next cuEventRecord on it finds a capture begun
 *                                       (one made between a check and the record)
 *   fake_cuda_set_captured_answer(r)    what an event recorded into a capture answers (907)
 *   fake_cuda_counter(which)            0: captures invalidated, 1: events recorded into a
 *                                       capture, 2: cuEventQuery calls in global mode
 *   fake_cuda_block_next_record(stream) the next cuEventRecord on it blocks until
 *                                       fake_cuda_release_record(); fake_cuda_blocked() is 1
 *                                       while it does
 * As the driver does: cuThreadExchangeStreamCaptureMode keeps a mode per thread; a
 * cuEventQuery made in global mode while any capture runs in global mode invalidates it and
 * answers 900; cuStreamIsCapturing on the legacy stream (NULL) during a global capture
 * answers 906. cuEventCreate hands out distinct non-NULL handles; every count starts at 0. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ncclshim/cuda_functions.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define EXPORT __attribute__((visibility("default")))

enum { MAX_EVENTS = 1 << 16, MAX_CAPTURES = 8, FIRST_EVENT = 0x1000, EVENT_STEP = 16 };

EXPORT int fake_capture_result, fake_capture_status, fake_query_result;

EXPORT ncclshim_cu_result cuDriverGetVersion(int *version) {
  *version = 11020;
  return NCCLSHIM_CUDA_SUCCESS;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the captures and the block */
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static struct {
  CUstream stream;
  int status, mode, on_record;
} captures[MAX_CAPTURES];
static CUstream block_stream;
static int block_armed;
static atomic_int blocked; /* written under the lock, read by the test's polls without it */
static atomic_int counters[3];
static _Thread_local int thread_mode; /* CU_STREAM_CAPTURE_MODE_GLOBAL */

static int find_capture(CUstream stream) { /* under the lock */
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i].status != 0 && captures[i].stream == stream) return i;
  return -1;
}

static int global_capture_running(void) { /* under the lock */
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (captures[i].status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE && captures[i].mode == 0)
      return 1;
  return 0;
}

EXPORT void fake_cuda_set_capture(CUstream stream, int status, int mode) {
  pthread_mutex_lock(&lock);
  int i = find_capture(stream);
  for (int j = 0; i < 0 && j < MAX_CAPTURES; j++)
    if (captures[j].status == 0 && !captures[j].on_record) i = j;
  if (i >= 0) {
    captures[i].stream = stream;
    captures[i].status = status;
    captures[i].mode = mode;
    captures[i].on_record = 0;
  }
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_end_captures(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++) captures[i].status = captures[i].on_record = 0;
  pthread_mutex_unlock(&lock);
}

EXPORT void fake_cuda_capture_on_record(CUstream stream) {
  pthread_mutex_lock(&lock);
  for (int j = 0; j < MAX_CAPTURES; j++) {
    if (captures[j].status == 0 && !captures[j].on_record) {
      captures[j].stream = stream;
      captures[j].mode = 1;
      captures[j].on_record = 1;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
}

EXPORT int fake_cuda_counter(int which) { return atomic_load(&counters[which % 3]); }

EXPORT ncclshim_cu_result cuThreadExchangeStreamCaptureMode(int *mode) {
  int previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return NCCLSHIM_CUDA_SUCCESS;
}

EXPORT ncclshim_cu_result cuStreamIsCapturing(CUstream stream, int *status) {
  pthread_mutex_lock(&lock);
  int i = find_capture(stream), global = global_capture_running();
  int own = i >= 0 ? captures[i].status : -1;
  pthread_mutex_unlock(&lock);
  if (own >= 0) {
    *status = own;
    return NCCLSHIM_CUDA_SUCCESS;
  }
  if (stream == NULL && global) return NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  if (fake_capture_result == NCCLSHIM_CUDA_SUCCESS) *status = fake_capture_status;
  return fake_capture_result;
}

EXPORT ncclshim_cu_result cuStreamQuery(CUstream stream) { return fake_query_result; }

static atomic_int event_query_result, record_result, captured_answer = 907, event_counts[4];
static atomic_int answers[MAX_EVENTS]; /* each event's, fixed when it is recorded */
static atomic_uintptr_t next_event = FIRST_EVENT;

EXPORT void fake_cuda_set_event_query(int result) { atomic_store(&event_query_result, result); }
EXPORT void fake_cuda_set_record_result(int result) { atomic_store(&record_result, result); }
EXPORT void fake_cuda_set_captured_answer(int result) { atomic_store(&captured_answer, result); }
EXPORT int fake_cuda_event_count(int which) { return atomic_load(&event_counts[which & 3]); }
EXPORT void fake_cuda_complete_all(void) {
  for (int i = 0; i < MAX_EVENTS; i++) atomic_store(&answers[i], 0);
}

EXPORT void fake_cuda_block_next_record(CUstream stream) {
  pthread_mutex_lock(&lock);
  block_stream = stream;
  block_armed = 1;
  pthread_mutex_unlock(&lock);
}
EXPORT int fake_cuda_blocked(void) { return atomic_load(&blocked); }
EXPORT void fake_cuda_release_record(void) {
  pthread_mutex_lock(&lock);
  block_armed = 0;
  atomic_store(&blocked, 0);
  pthread_cond_broadcast(&released);
  pthread_mutex_unlock(&lock);
}

static struct { /* set from the test's thread, read by any: one writer at a time */
  _Atomic(CUstream) stream;
  atomic_int answer, used;
} stream_answers[MAX_CAPTURES];

EXPORT void fake_cuda_set_stream_answer(CUstream stream, int answer) {
  int free = -1;
  for (int i = MAX_CAPTURES - 1; i >= 0; i--) {
    if (!atomic_load(&stream_answers[i].used)) free = i;
    if (atomic_load(&stream_answers[i].used) && atomic_load(&stream_answers[i].stream) == stream) {
      if (answer == -1) atomic_store(&stream_answers[i].used, 0);
      atomic_store(&stream_answers[i].answer, answer);
      return;
    }
  }
  if (answer == -1 || free < 0) return;
  atomic_store(&stream_answers[free].stream, stream);
  atomic_store(&stream_answers[free].answer, answer);
  atomic_store(&stream_answers[free].used, 1);
}

EXPORT void fake_cuda_reset_stream_answers(void) {
  for (int i = 0; i < MAX_CAPTURES; i++) atomic_store(&stream_answers[i].used, 0);
}

static int answer_for(CUstream stream) {
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (atomic_load(&stream_answers[i].used) && atomic_load(&stream_answers[i].stream) == stream)
      return atomic_load(&stream_answers[i].answer);
  return atomic_load(&event_query_result);
}

static atomic_int *answer_of(CUevent event) {
  uintptr_t i = ((uintptr_t)event - FIRST_EVENT) / EVENT_STEP;
  return &answers[i % MAX_EVENTS]; /* events made 64 Ki apart share an answer */
}

EXPORT ncclshim_cu_result cuEventCreate(CUevent *event, unsigned int flags) {
  atomic_fetch_add(&event_counts[0], 1);
  *event = (CUevent)atomic_fetch_add(&next_event, EVENT_STEP);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy(CUevent event) {
  atomic_fetch_add(&event_counts[1], 1);
  return NCCLSHIM_CUDA_SUCCESS;
}
EXPORT ncclshim_cu_result cuEventDestroy_v2(CUevent event) __attribute__((alias("cuEventDestroy")));
EXPORT ncclshim_cu_result cuEventRecord(CUevent event, CUstream stream) {
  atomic_fetch_add(&event_counts[2], 1);
  pthread_mutex_lock(&lock);
  if (block_armed && block_stream == stream) {
    block_armed = 0;
    atomic_store(&blocked, 1);
    while (atomic_load(&blocked)) pthread_cond_wait(&released, &lock);
  }
  for (int j = 0; j < MAX_CAPTURES; j++) {
    if (captures[j].on_record && captures[j].stream == stream) { /* begun just now */
      captures[j].on_record = 0;
      captures[j].status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    }
  }
  int captured = find_capture(stream) >= 0;
  pthread_mutex_unlock(&lock);
  if (captured) atomic_fetch_add(&counters[1], 1);
  atomic_store(answer_of(event), captured ? atomic_load(&captured_answer) : answer_for(stream));
  return atomic_load(&record_result);
}
EXPORT ncclshim_cu_result cuEventQuery(CUevent event) {
  atomic_fetch_add(&event_counts[3], 1);
  if (thread_mode == NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL) {
    atomic_fetch_add(&counters[2], 1);
    pthread_mutex_lock(&lock);
    int invalidated = 0;
    for (int i = 0; i < MAX_CAPTURES; i++) {
      if (captures[i].status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE && captures[i].mode == 0) {
        captures[i].status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        invalidated = 1;
      }
    }
    pthread_mutex_unlock(&lock);
    if (invalidated) {
      atomic_fetch_add(&counters[0], 1);
      return NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return atomic_load(answer_of(event));
}

/* Every other row, under both exported names (name and name_v2); the error-text functions
 * are left out, so ncclshim answers those from its own table. */
#define WRITTEN_cuDriverGetVersion ~, 1,
#define WRITTEN_cuStreamIsCapturing ~, 1,
#define WRITTEN_cuStreamQuery ~, 1,
#define WRITTEN_cuThreadExchangeStreamCaptureMode ~, 1,
#define WRITTEN_cuEventCreate ~, 1,
#define WRITTEN_cuEventDestroy ~, 1,
#define WRITTEN_cuEventRecord ~, 1,
#define WRITTEN_cuEventQuery ~, 1,
#define WRITTEN_cuGetErrorName ~, 1,
#define WRITTEN_cuGetErrorString ~, 1,
#include "fake_cuda_rest.h"
