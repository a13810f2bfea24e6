/* The hang dump's queue of events, their spares, and the streams that share events. */
#include <string.h>
#include <time.h>

#include "record_hang_queue.h"

ncs_hang_state ncs_hang = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t ncs_hang_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t ncs_hang_push(const rec_driver *d, const ncs_hang_entry *e) {
  if (ncs_hang.count == HANG_SLOTS) { /* full: the newest gives way; the oldest hold deadlines */
    d->event_destroy(ncs_hang.queue[(ncs_hang.head + HANG_SLOTS - 1) % HANG_SLOTS].event);
    ncs_hang.count--;
  }
  ncs_hang.queue[(ncs_hang.head + ncs_hang.count) % HANG_SLOTS] = *e;
  if (ncs_hang.count++ == 0) pthread_cond_signal(&ncs_hang.wake);
  return ncs_hang.popped + ncs_hang.count - 1;
}

void ncs_hang_pop(int completed) {
  ncs_hang_entry *e = &ncs_hang.queue[ncs_hang.head];
  if (completed && ncs_hang.spares < HANG_SLOTS) {
    ncs_hang.spare[ncs_hang.spares].event = e->event;
    ncs_hang.spare[ncs_hang.spares++].ctx = e->ctx;
  }
  ncs_hang.head = (ncs_hang.head + 1) % HANG_SLOTS;
  ncs_hang.count--;
  ncs_hang.popped++;
}

int ncs_hang_pending(const ncs_hang_stream *s) {
  if (s->newest < ncs_hang.popped || s->newest - ncs_hang.popped >= ncs_hang.count) return 0;
  /* Its id may have gone to another stream's entry when a full queue dropped its newest. */
  size_t at = (ncs_hang.head + (size_t)(s->newest - ncs_hang.popped)) % HANG_SLOTS;
  return ncs_hang.queue[at].stream == s->stream;
}

ncs_hang_stream *ncs_hang_stream_of(const void *stream, int create) {
  ncs_hang_stream *free_row = NULL;
  for (int i = 0; i < HANG_STREAMS; i++) {
    ncs_hang_stream *s = &ncs_hang.streams[i];
    if (s->stream == stream) return s;
    /* A row whose stream has nothing pending or waiting may go to another stream. */
    if (free_row == NULL && (s->stream == NULL || (!s->waits && !ncs_hang_pending(s))))
      free_row = s;
  }
  if (!create || free_row == NULL) return NULL;
  *free_row = (ncs_hang_stream){.stream = stream, .newest = UINT64_MAX};
  return free_row;
}

CUevent ncs_hang_spare(CUcontext ctx) {
  for (size_t i = ncs_hang.spares; i-- > 0;) {
    if (ncs_hang.spare[i].ctx != ctx) continue;
    CUevent event = ncs_hang.spare[i].event;
    ncs_hang.spare[i] = ncs_hang.spare[--ncs_hang.spares];
    return event;
  }
  return NULL;
}

int ncs_hang_record(const rec_driver *d, ncs_hang_entry *e, CUevent event) {
  if ((event == NULL &&
       d->event_create(&event, NCCLSHIM_CU_EVENT_DISABLE_TIMING) != NCCLSHIM_CUDA_SUCCESS) ||
      d->event_record(event, (CUstream)e->stream) != NCCLSHIM_CUDA_SUCCESS) {
    if (event != NULL) d->event_destroy(event);
    return 0;
  }
  e->event = event;
  e->since_ns = ncs_hang_now_ns();
  return 1;
}

void ncs_hang_forget(void) {
  ncs_hang.head = ncs_hang.count = ncs_hang.spares = 0;
  ncs_hang.popped = 0;
  memset(ncs_hang.streams, 0, sizeof(ncs_hang.streams));
}
