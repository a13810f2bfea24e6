/* The fake driver's streams, events and captures, as strict as the real driver's (fake_cuda.h
 * lists what was measured). Streams live in a fixed pool whose freed handles are handed out
 * again, the one destroyed last first; events are never reused, so that a destroyed one is
 * always told apart (they are small: the pool only grows, by chunks). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_state.h"

#define EXPORT __attribute__((visibility("default")))

enum { CHUNK = 4096, CHUNKS = 1024, CAPTURED_DEFAULT = 907, PER_THREAD = 1024 };

EXPORT int fake_capture_result, fake_capture_status;

static struct CUstream_st streams[FAKE_CUDA_STREAMS];
static int free_stack[FAKE_CUDA_STREAMS], free_depth = -1; /* -1: not filled yet */
static struct CUstream_st legacy[FAKE_CUDA_DEVICES];
/* The per-thread streams: a thread's own, taken from a pool kept to the process's end. */
static struct CUstream_st per_thread_pool[PER_THREAD];
static int per_thread_used;
static _Thread_local struct CUstream_st *per_thread[FAKE_CUDA_DEVICES];
static struct CUevent_st *chunks[CHUNKS];
static int event_count, live_events; /* handed out; not destroyed */
static int default_answer, stream_query, captured_answer = CAPTURED_DEFAULT, next_capture_id;
static int counters[3];
static int last_capture_mode = -1;
static _Thread_local int thread_mode; /* CU_STREAM_CAPTURE_MODE_GLOBAL, per thread */
static CUstream block_stream;
static int block_armed, blocked;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;

static void fill_free_stack(void) { /* under the lock: streams[0] is handed out first */
  for (int i = 0; i < FAKE_CUDA_STREAMS; i++) free_stack[i] = FAKE_CUDA_STREAMS - 1 - i;
  free_depth = FAKE_CUDA_STREAMS;
}

static int is_legacy(CUstream h) {
  return h == NULL || h == NCCLSHIM_CU_STREAM_LEGACY || h == NCCLSHIM_CU_STREAM_PER_THREAD;
}

static struct CUstream_st *implicit_stream(CUstream h, CUcontext ctx) { /* under the lock */
  int dev = ctx->device;
  if (h != NCCLSHIM_CU_STREAM_PER_THREAD) {
    if (legacy[dev].state != STREAM_LIVE)
      legacy[dev] = (struct CUstream_st){
          .state = STREAM_LIVE, .kind = KIND_LEGACY, .ctx = ctx, .answer = FAKE_CUDA_ANY_RESULT};
    return &legacy[dev];
  }
  if (per_thread[dev] == NULL) {
    if (per_thread_used == PER_THREAD) fake_die("(per-thread stream)", "no room for", h);
    per_thread[dev] = &per_thread_pool[per_thread_used++];
    *per_thread[dev] = (struct CUstream_st){
        .state = STREAM_LIVE, .kind = KIND_PER_THREAD, .ctx = ctx, .answer = FAKE_CUDA_ANY_RESULT};
  }
  return per_thread[dev];
}

struct CUstream_st *fake_stream_of(const char *call, CUstream h, ncclshim_cu_result *rc) {
  *rc = 0;
  if (is_legacy(h)) {
    CUcontext ctx = fake_current();
    if (ctx == NULL) {
      *rc = 201;
      return NULL;
    }
    return implicit_stream(h, ctx);
  }
  uintptr_t p = (uintptr_t)h, first = (uintptr_t)&streams[0];
  uintptr_t i = (p - first) / sizeof(streams[0]);
  if (p < first || i >= FAKE_CUDA_STREAMS || (p - first) % sizeof(streams[0]) != 0 ||
      streams[i].state == STREAM_FREE)
    fake_die(call, "a value that was never a stream:", h);
  if (streams[i].state == STREAM_DESTROYED) fake_die(call, "destroyed stream", h);
  return &streams[i];
}

/* The event a handle names; aborts for one never handed out; NULL for a NULL handle. */
static struct CUevent_st *event_of(const char *call, CUevent h) { /* under the lock */
  if (h == NULL) return NULL;
  uintptr_t p = (uintptr_t)h;
  for (int c = 0; c < CHUNKS && chunks[c] != NULL; c++) {
    uintptr_t first = (uintptr_t)chunks[c];
    if (p >= first && p < first + CHUNK * sizeof(struct CUevent_st) &&
        (p - first) % sizeof(struct CUevent_st) == 0 &&
        (int)(c * CHUNK + (p - first) / sizeof(struct CUevent_st)) < event_count)
      return (struct CUevent_st *)h;
  }
  fake_die(call, "a value that was never an event:", h);
}

/* The lock taken, the stream a call names: 0, or the call's answer (the lock released). */
#define LOCK_STREAM(call, s, h)                          \
  ncclshim_cu_result rc_;                                \
  pthread_mutex_lock(&fake_lock);                        \
  struct CUstream_st *s = fake_stream_of(call, h, &rc_); \
  if (!fake_initialized()) rc_ = 3;                      \
  if (rc_ != 0) {                                        \
    pthread_mutex_unlock(&fake_lock);                    \
    return rc_;                                          \
  }

static int global_capture_running(void) { /* under the lock */
  for (int i = 0; i < FAKE_CUDA_STREAMS; i++)
    if (streams[i].state == STREAM_LIVE &&
        streams[i].capture_status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        streams[i].capture_mode == NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL)
      return 1;
  return 0;
}

static void invalidate(struct CUstream_st *s) { /* under the lock */
  s->capture_status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  counters[0]++;
}

/* Whether an event is still pending (its answer 600, or its delay not over). */
static int pending(const struct CUevent_st *e, long long now) {
  return e->recorded && e->capture_id == 0 &&
         (e->answer == 600 || (e->complete_at_ns != 0 && now < e->complete_at_ns));
}

static int on_stream(const struct CUevent_st *e, const struct CUstream_st *s) {
  return e->recorded && e->stream == s && e->generation == s->generation;
}

#define EACH_EVENT(e)                      \
  for (int i_ = 0; i_ < event_count; i_++) \
    for (struct CUevent_st *e = &chunks[i_ / CHUNK][i_ % CHUNK]; e != NULL; e = NULL)

/* ---- Streams ----------------------------------------------------------------------------- */

ncclshim_cu_result fake_cuStreamCreate(CUstream *phStream, unsigned int flags) {
  pthread_mutex_lock(&fake_lock);
  CUcontext ctx = fake_current();
  ncclshim_cu_result rc = !fake_initialized() ? 3 : ctx == NULL ? 201 : phStream == NULL ? 1 : 0;
  if (rc == 0 && flags > NCCLSHIM_CU_STREAM_NON_BLOCKING) rc = 1;
  if (rc == 0 && free_depth < 0) fill_free_stack();
  if (rc == 0 && free_depth == 0) rc = 2;
  if (rc == 0) {
    struct CUstream_st *s = &streams[free_stack[--free_depth]];
    *s = (struct CUstream_st){.state = STREAM_LIVE,
                              .kind = KIND_CREATED,
                              .generation = s->generation + 1,
                              .ctx = ctx,
                              .answer = FAKE_CUDA_ANY_RESULT};
    *phStream = s;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuStreamDestroy(CUstream hStream) {
  if (is_legacy(hStream)) return 400;
  LOCK_STREAM("cuStreamDestroy", s, hStream);
  s->state = STREAM_DESTROYED;
  s->capture_status = 0;
  free_stack[free_depth++] = (int)(s - streams);
  pthread_mutex_unlock(&fake_lock);
  return 0;
}

/* What cuStreamQuery answers for a stream: under the lock. */
static ncclshim_cu_result stream_state(struct CUstream_st *s) {
  if (stream_query != 0) return stream_query;
  long long now = fake_now_ns();
  ncclshim_cu_result rc = 0;
  EACH_EVENT(e) {
    if (!on_stream(e, s)) continue;
    if (pending(e, now)) return 600;
    if (e->capture_id == 0 && e->answer != 0 && e->answer != 600) rc = e->answer;
  }
  return rc;
}

ncclshim_cu_result fake_cuStreamQuery(CUstream hStream) {
  LOCK_STREAM("cuStreamQuery", s, hStream);
  ncclshim_cu_result rc = 600;
  if (fake_control.not_ready > 0)
    fake_control.not_ready--;
  else
    rc = stream_state(s);
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

/* The fake runs no work: a copy on a live stream happens at once. */
ncclshim_cu_result fake_cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                          size_t byteCount, CUstream hStream) {
  LOCK_STREAM("cuMemcpyHtoDAsync", s, hStream);
  (void)s;
  pthread_mutex_unlock(&fake_lock);
  return fake_cuMemcpyHtoD(dstDevice, srcHost, byteCount);
}

ncclshim_cu_result fake_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t byteCount,
                                          CUstream hStream) {
  LOCK_STREAM("cuMemcpyDtoHAsync", s, hStream);
  (void)s;
  pthread_mutex_unlock(&fake_lock);
  return fake_cuMemcpyDtoH(dstHost, srcDevice, byteCount);
}

/* Waits (polling every ms) until the stream has nothing pending: forever for a held stream
 * that nobody releases, as the real driver would. */
ncclshim_cu_result fake_cuStreamSynchronize(CUstream hStream) {
  LOCK_STREAM("cuStreamSynchronize", s, hStream);
  fake_control.not_ready = 0;
  unsigned generation = s->generation;
  ncclshim_cu_result rc;
  while ((rc = stream_state(s)) == 600 && stream_query == 0 && s->generation == generation) {
    pthread_mutex_unlock(&fake_lock);
    fake_sleep_ms(1);
    pthread_mutex_lock(&fake_lock);
  }
  pthread_mutex_unlock(&fake_lock);
  return rc == 600 ? 0 : rc;
}

ncclshim_cu_result fake_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
  LOCK_STREAM("cuStreamWaitEvent", s, hStream);
  (void)s;
  struct CUevent_st *e = event_of("cuStreamWaitEvent", hEvent);
  ncclshim_cu_result rc = flags != 0 ? 1 : e == NULL ? 400 : !e->live ? 709 : 0;
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  LOCK_STREAM("cuStreamGetCtx", s, hStream);
  if (pctx != NULL) *pctx = s->ctx;
  pthread_mutex_unlock(&fake_lock);
  return pctx != NULL ? 0 : 1;
}

/* ---- Captures ---------------------------------------------------------------------------- */

ncclshim_cu_result fake_cuStreamIsCapturing(CUstream hStream,
                                            ncclshim_cu_stream_capture_status *captureStatus) {
  LOCK_STREAM("cuStreamIsCapturing", s, hStream);
  int own = s->capture_status, global = global_capture_running();
  pthread_mutex_unlock(&fake_lock);
  if (own != 0) {
    *captureStatus = own;
    return 0;
  }
  if (s->kind == KIND_LEGACY && global) return NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  if (fake_capture_result != 0) return fake_capture_result;
  *captureStatus = fake_capture_status;
  return 0;
}

ncclshim_cu_result fake_cuStreamBeginCapture(CUstream hStream, int mode) {
  if (mode < 0 || mode > NCCLSHIM_CU_STREAM_CAPTURE_MODE_RELAXED) return 1;
  if (is_legacy(hStream)) return NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  LOCK_STREAM("cuStreamBeginCapture", s, hStream);
  ncclshim_cu_result rc =
      s->capture_status != 0 ? NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : 0;
  if (rc == 0) {
    s->capture_status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    s->capture_mode = mode;
    s->capture_id = ++next_capture_id;
    s->capture_thread = (unsigned long)pthread_self();
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

static char graph_token; /* what a capture ends in: the fake keeps no graph */

ncclshim_cu_result fake_cuStreamEndCapture(CUstream hStream, void **phGraph) {
  if (phGraph == NULL) return 1;
  if (is_legacy(hStream)) return 400;
  LOCK_STREAM("cuStreamEndCapture", s, hStream);
  ncclshim_cu_result rc = 0;
  if (s->capture_status == 0)
    rc = 401; /* CUDA_ERROR_ILLEGAL_STATE */
  else if (s->capture_mode != NCCLSHIM_CU_STREAM_CAPTURE_MODE_RELAXED &&
           s->capture_thread != (unsigned long)pthread_self())
    rc = NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  else if (s->capture_status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    rc = NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (rc != 401 && rc != NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) s->capture_status = 0;
  *phGraph = rc == 0 ? &graph_token : NULL;
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuThreadExchangeStreamCaptureMode(int *mode) {
  if (mode == NULL || *mode < 0 || *mode > NCCLSHIM_CU_STREAM_CAPTURE_MODE_RELAXED) return 1;
  pthread_mutex_lock(&fake_lock);
  last_capture_mode = *mode;
  pthread_mutex_unlock(&fake_lock);
  int previous = thread_mode;
  thread_mode = *mode;
  *mode = previous;
  return 0;
}

/* ---- Events ------------------------------------------------------------------------------ */

ncclshim_cu_result fake_cuEventCreate(CUevent *phEvent, unsigned int flags) {
  pthread_mutex_lock(&fake_lock);
  CUcontext ctx = fake_current();
  ncclshim_cu_result rc = !fake_initialized() ? 3 : ctx == NULL ? 201 : phEvent == NULL ? 1 : 0;
  if (rc == 0 && flags > 0xf) rc = 1;
  if (rc == 0 && event_count == CHUNK * CHUNKS) rc = 2;
  if (rc == 0 && chunks[event_count / CHUNK] == NULL &&
      (chunks[event_count / CHUNK] = calloc(CHUNK, sizeof(struct CUevent_st))) == NULL)
    rc = 2;
  if (rc == 0) {
    struct CUevent_st *e = &chunks[event_count / CHUNK][event_count % CHUNK];
    event_count++;
    live_events++;
    *e = (struct CUevent_st){.live = 1, .ctx = ctx};
    *phEvent = e;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuEventDestroy(CUevent hEvent) {
  pthread_mutex_lock(&fake_lock);
  struct CUevent_st *e = event_of("cuEventDestroy", hEvent);
  ncclshim_cu_result rc = e == NULL ? 400 : !e->live ? 709 : 0;
  if (rc == 0) {
    e->live = 0;
    live_events--;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

/* cuEventRecord's arming of fake_cuda_block_next_record: blocks there until released. */
static void maybe_block(CUstream h) { /* under the lock */
  if (!block_armed || block_stream != h) return;
  block_armed = 0;
  blocked = 1;
  while (blocked) pthread_cond_wait(&released, &fake_lock);
}

ncclshim_cu_result fake_cuEventRecord(CUevent hEvent, CUstream hStream) {
  pthread_mutex_lock(&fake_lock);
  maybe_block(hStream);
  pthread_mutex_unlock(&fake_lock);
  LOCK_STREAM("cuEventRecord", s, hStream);
  struct CUevent_st *e = event_of("cuEventRecord", hEvent);
  ncclshim_cu_result rc = e == NULL ? 400 : !e->live ? 709 : e->ctx != s->ctx ? 400 : 0;
  if (rc == 0 && s->capture_on_record) { /* a capture begun just before this record */
    s->capture_on_record = 0;
    s->capture_status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    s->capture_mode = NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    s->capture_id = ++next_capture_id;
    s->capture_thread = (unsigned long)pthread_self();
  }
  if (rc == 0 && s->kind == KIND_LEGACY && global_capture_running()) {
    for (int i = 0; i < FAKE_CUDA_STREAMS; i++)
      if (streams[i].state == STREAM_LIVE && streams[i].capture_status == 1 &&
          streams[i].capture_mode == NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL)
        invalidate(&streams[i]);
    rc = NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  if (rc == 0 && s->capture_status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    rc = NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (rc == 0) {
    e->recorded = 1;
    e->stream = s;
    e->generation = s->generation;
    e->capture_id = s->capture_status != 0 ? s->capture_id : 0;
    e->complete_at_ns = 0;
    if (e->capture_id != 0) counters[1]++;
    int answer = s->answer == FAKE_CUDA_ANY_RESULT ? default_answer : s->answer;
    if (s->answer_after > 0) {
      s->answer_after--;
      answer = 0;
    }
    e->answer = answer;
    if (s->delay_ms > 0) e->complete_at_ns = fake_now_ns() + s->delay_ms * 1000000LL;
    s->records++;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

ncclshim_cu_result fake_cuEventQuery(CUevent hEvent) {
  pthread_mutex_lock(&fake_lock);
  struct CUevent_st *e = event_of("cuEventQuery", hEvent);
  ncclshim_cu_result rc = e == NULL ? 400 : !e->live ? 709 : 0;
  if (rc == 0 && thread_mode == NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL) {
    counters[2]++;
    for (int i = 0; i < FAKE_CUDA_STREAMS; i++) {
      if (streams[i].state == STREAM_LIVE && streams[i].capture_status == 1 &&
          streams[i].capture_mode == NCCLSHIM_CU_STREAM_CAPTURE_MODE_GLOBAL) {
        invalidate(&streams[i]);
        rc = NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      }
    }
  }
  if (rc == 0 && e->recorded && e->capture_id != 0) { /* a captured event */
    for (int i = 0; i < FAKE_CUDA_STREAMS; i++)
      if (streams[i].state == STREAM_LIVE && streams[i].capture_id == e->capture_id &&
          streams[i].capture_status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE)
        invalidate(&streams[i]);
    rc = captured_answer;
  } else if (rc == 0 && pending(e, fake_now_ns())) {
    rc = 600;
  } else if (rc == 0 && e->recorded) {
    rc = e->answer;
  }
  pthread_mutex_unlock(&fake_lock);
  return rc;
}

/* Waits (polling every ms) until the event is no longer pending. */
ncclshim_cu_result fake_cuEventSynchronize(CUevent hEvent) {
  ncclshim_cu_result rc;
  while ((rc = fake_cuEventQuery(hEvent)) == 600) fake_sleep_ms(1);
  return rc;
}

/* Both ABIs are real (NCCLSHIM_CUDA_OLDER_ABIS): the old one is what drivers before 12.8
 * offer. */
ncclshim_cu_result fake_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  pthread_mutex_lock(&fake_lock);
  struct CUevent_st *a = event_of("cuEventElapsedTime", hStart);
  struct CUevent_st *b = event_of("cuEventElapsedTime", hEnd);
  ncclshim_cu_result rc = a == NULL || b == NULL ? 400 : !a->live || !b->live ? 709 : 0;
  if (rc == 0 && (!a->recorded || !b->recorded)) rc = 400;
  pthread_mutex_unlock(&fake_lock);
  if (rc == 0) *pMilliseconds = 0.5f;
  return rc;
}

/* ---- Controls ---------------------------------------------------------------------------- */

void fake_reset_streams(void) { /* every stream destroyed, every setting back */
  if (free_depth < 0) fill_free_stack();
  for (int i = 0; i < FAKE_CUDA_STREAMS; i++) {
    if (streams[i].state != STREAM_LIVE) continue;
    streams[i].state = STREAM_DESTROYED;
    free_stack[free_depth++] = i;
  }
  for (int d = 0; d < FAKE_CUDA_DEVICES; d++) {
    legacy[d].answer = FAKE_CUDA_ANY_RESULT;
    legacy[d].answer_after = legacy[d].delay_ms = legacy[d].capture_status = 0;
  }
  for (int i = 0; i < per_thread_used; i++) {
    per_thread_pool[i].answer = FAKE_CUDA_ANY_RESULT;
    per_thread_pool[i].answer_after = per_thread_pool[i].delay_ms = 0;
  }
  EACH_EVENT(e) e->answer = 0, e->complete_at_ns = 0, e->capture_id = 0;
  default_answer = stream_query = 0;
  captured_answer = CAPTURED_DEFAULT;
  memset(counters, 0, sizeof(counters));
  last_capture_mode = -1;
  block_armed = 0;
}

/* The stream object a control names, under the lock (NULL: a legacy one without context). */
static struct CUstream_st *control_stream(const char *control, CUstream h) {
  ncclshim_cu_result rc;
  return fake_stream_of(control, h, &rc);
}

EXPORT CUstream fake_cuda_new_stream(int device) {
  CUcontext ctx = fake_cuda_context(device);
  CUstream s = NULL;
  if (ctx == NULL || fake_cuCtxPushCurrent(ctx) != 0) return NULL;
  if (fake_cuStreamCreate(&s, NCCLSHIM_CU_STREAM_DEFAULT) != 0) s = NULL;
  fake_cuCtxPopCurrent(NULL);
  return s;
}

EXPORT int fake_cuda_stream_alive(CUstream stream) {
  uintptr_t p = (uintptr_t)stream, first = (uintptr_t)&streams[0];
  uintptr_t i = (p - first) / sizeof(streams[0]);
  if (p < first || i >= FAKE_CUDA_STREAMS) return 0;
  pthread_mutex_lock(&fake_lock);
  int alive = streams[i].state == STREAM_LIVE;
  pthread_mutex_unlock(&fake_lock);
  return alive;
}

EXPORT int fake_cuda_stream_records(CUstream stream) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  int n = s != NULL ? s->records : -1;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

EXPORT void fake_cuda_set_event_query(int result) {
  pthread_mutex_lock(&fake_lock);
  default_answer = result;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_set_stream_answer(CUstream stream, int result, int after) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  if (s != NULL) {
    s->answer = result;
    s->answer_after = after;
  }
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_set_stream_delay(CUstream stream, int ms) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  if (s != NULL) s->delay_ms = ms;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_release_stream(CUstream stream) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  if (s != NULL) {
    s->answer = FAKE_CUDA_ANY_RESULT;
    s->answer_after = 0;
    EACH_EVENT(e) if (on_stream(e, s) && e->answer == 600) e->answer = 0;
  }
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_complete_all(void) {
  pthread_mutex_lock(&fake_lock);
  EACH_EVENT(e) if (e->answer == 600) e->answer = 0, e->complete_at_ns = 0;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_set_stream_query(int result) {
  pthread_mutex_lock(&fake_lock);
  stream_query = result;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_block_next_record(CUstream stream) {
  pthread_mutex_lock(&fake_lock);
  block_stream = stream;
  block_armed = 1;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT int fake_cuda_blocked(void) {
  pthread_mutex_lock(&fake_lock);
  int b = blocked;
  pthread_mutex_unlock(&fake_lock);
  return b;
}

EXPORT void fake_cuda_release_record(void) {
  pthread_mutex_lock(&fake_lock);
  block_armed = 0;
  blocked = 0;
  pthread_cond_broadcast(&released);
  pthread_mutex_unlock(&fake_lock);
}

EXPORT int fake_cuda_live_events(void) {
  pthread_mutex_lock(&fake_lock);
  int n = live_events;
  pthread_mutex_unlock(&fake_lock);
  return n;
}

EXPORT void fake_cuda_set_capture(CUstream stream, int status, int mode) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  if (s != NULL) {
    if (s->capture_status == 0 && status != 0) s->capture_id = ++next_capture_id;
    s->capture_status = status;
    s->capture_mode = mode;
    s->capture_on_record = 0;
    s->capture_thread = (unsigned long)pthread_self();
  }
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_end_captures(void) {
  pthread_mutex_lock(&fake_lock);
  for (int i = 0; i < FAKE_CUDA_STREAMS; i++)
    streams[i].capture_status = streams[i].capture_on_record = 0;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_capture_on_record(CUstream stream) {
  pthread_mutex_lock(&fake_lock);
  struct CUstream_st *s = control_stream(__func__, stream);
  if (s != NULL) s->capture_on_record = 1;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT void fake_cuda_set_captured_answer(int result) {
  pthread_mutex_lock(&fake_lock);
  captured_answer = result;
  pthread_mutex_unlock(&fake_lock);
}

EXPORT int fake_cuda_counter(int which) {
  pthread_mutex_lock(&fake_lock);
  int n = which == 3 ? last_capture_mode : counters[(unsigned)which % 3];
  pthread_mutex_unlock(&fake_lock);
  return n;
}
