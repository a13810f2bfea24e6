/* The hang dump's checking thread: it asks the driver about the oldest event, dumps once when
 * that is not complete N ms after it was recorded, and records an event for operations that
 * wait for one once their stream's newest event has left the queue (record_hang.c). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "record_hang_queue.h"
#include "record_hang_thread.h"
#include "record_state.h"
#include "say.h"

static void wait_until(uint64_t ns) {
  struct timespec t = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
  pthread_cond_timedwait(&ncs_hang.wake, &ncs_hang.lock, &t);
}

/* Dump, once; the line on stderr names the call (or the calls) and how long it has been
 * pending. */
static void fire(const rec_state *r, const ncs_hang_entry *e) {
  char note[240], others[120] = "";
  if (e->after > 0)
    snprintf(others, sizeof(others),
             " to #%llu (%llu operations under one event), or work enqueued after them,",
             (unsigned long long)e->last_seq, (unsigned long long)e->after + 1);
  snprintf(note, sizeof(note), " (hang: %s #%llu%s not complete after %d ms)",
           ncclshim_nccl_function_name(e->fn), (unsigned long long)e->seq, others, r->hang_ms);
  ncs_rec_dump_hang(e->fn, r->hang_ms, e->index, e->after + 1, note);
}

/* Under the lock: one event for each stream's waiting operations once its newest entry has
 * left the queue. A stream that began capturing since gets none: an event there would join
 * the program's graph, so those operations go unwatched. */
static void close_waiting(const rec_driver *d, CUcontext *current) {
  for (int i = 0; i < HANG_STREAMS; i++) {
    ncs_hang_stream *s = &ncs_hang.streams[i];
    if (!s->waits || ncs_hang_pending(s)) continue;
    ncs_hang_entry e = s->waiting;
    e.ctx = s->ctx;
    s->waits = 0;
    CUevent event = ncs_hang_spare(e.ctx);
    pthread_mutex_unlock(&ncs_hang.lock);
    if (e.ctx != *current && d->ctx_set(e.ctx) == NCCLSHIM_CUDA_SUCCESS) *current = e.ctx;
    ncclshim_cu_stream_capture_status status = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
    int recorded = 0;
    if (d->is_capturing((CUstream)e.stream, &status) == NCCLSHIM_CUDA_SUCCESS &&
        status == NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE) {
      recorded = ncs_hang_record(d, &e, event);
    } else if (event != NULL) {
      d->event_destroy(event);
    }
    pthread_mutex_lock(&ncs_hang.lock);
    if (recorded && ncs_hang.stop) {
      d->event_destroy(e.event);
    } else if (recorded) {
      uint64_t id = ncs_hang_push(d, &e);
      if (s->stream == e.stream) s->newest = id;
    }
  }
}

static void *check(void *unused) {
  (void)unused;
  rec_state *r = ncs_rec;
  const rec_driver *d = ncs_rec_driver();
  uint64_t limit = (uint64_t)r->hang_ms * 1000000u;
  /* The pace at which completed events leave the queue (so that it never fills up), and
   * with them how late waiting operations get their event: a twentieth of the limit. */
  uint64_t interval = limit / 20 < 100000000u ? limit / 20 : 100000000u;
  CUcontext current = NULL;
  /* Thread-local capture mode: this thread's queries never invalidate a graph capture that
   * another thread began in global mode (torch.cuda.graph's default). */
  int mode = NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  if (d->exchange_capture_mode != NULL) d->exchange_capture_mode(&mode);
  pthread_mutex_lock(&ncs_hang.lock);
  while (!ncs_hang.stop && !ncs_hang.fired) {
    /* One pass: the completed events leave, the oldest pending one is held to its
     * deadline, the streams whose newest event left get one for their waiting operations;
     * then nothing until the next pass, so that operations share events meanwhile. */
    uint64_t now = ncs_hang_now_ns(), due = now + interval;
    while (ncs_hang.count > 0 && !ncs_hang.stop) {
      ncs_hang_entry e = ncs_hang.queue[ncs_hang.head];
      uint64_t id = ncs_hang.popped;
      pthread_mutex_unlock(&ncs_hang.lock);
      if (e.ctx != current && d->ctx_set(e.ctx) == NCCLSHIM_CUDA_SUCCESS) current = e.ctx;
      ncclshim_cu_result answer = d->event_query(e.event);
      now = ncs_hang_now_ns();
      pthread_mutex_lock(&ncs_hang.lock);
      if (ncs_hang.count == 0 || ncs_hang.popped != id) continue;
      if (answer != NCCLSHIM_CUDA_ERROR_NOT_READY) {
        /* Completed, or an event the driver no longer knows (its context ended): either
         * way not a hang. */
        ncs_hang_pop(answer == NCCLSHIM_CUDA_SUCCESS);
        continue;
      }
      if (now - e.since_ns >= limit) {
        ncs_hang.fired = 1;
        pthread_mutex_unlock(&ncs_hang.lock);
        fire(r, &e);
        pthread_mutex_lock(&ncs_hang.lock);
      } else if (e.since_ns + limit < due) {
        due = e.since_ns + limit;
      }
      break;
    }
    if (ncs_hang.stop || ncs_hang.fired) break;
    close_waiting(d, &current);
    if (ncs_hang.count == 0) { /* the first push wakes it; its pass comes an interval on */
      pthread_cond_wait(&ncs_hang.wake, &ncs_hang.lock);
      due = ncs_hang_now_ns() + interval;
    }
    if (!ncs_hang.stop) wait_until(due);
  }
  pthread_mutex_unlock(&ncs_hang.lock);
  return NULL;
}

/* At exit or dlclose, before the driver or this library goes: the thread ends first. */
static void stop_checking(void) {
  pthread_mutex_lock(&ncs_hang.lock);
  int joinable = ncs_hang.started && ncs_hang.pid == getpid();
  ncs_hang.stop = 1;
  pthread_cond_signal(&ncs_hang.wake);
  pthread_mutex_unlock(&ncs_hang.lock);
  if (joinable) pthread_join(ncs_hang.thread, NULL);
}

int ncs_hang_ready(void) {
  if (ncs_hang.started && ncs_hang.pid == getpid()) return 1;
  if (ncs_hang.started) { /* a forked child: the parent's thread and events are not its own */
    ncs_hang_forget();
    ncs_hang.fired = ncs_hang.stop = 0;
  }
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&ncs_hang.wake, &attr);
  pthread_condattr_destroy(&attr);
  ncs_hang.pid = getpid();
  int error = pthread_create(&ncs_hang.thread, NULL, check, NULL);
  ncs_hang.started = error == 0;
  if (!ncs_hang.started) { /* said once; no event is recorded from now on */
    ncs_hang.stop = 1;
    ncs_rec_say("no hang dump: its thread could not be started", "", "", error);
  }
  static int registered;
  if (ncs_hang.started && !registered) registered = atexit(stop_checking) == 0;
  return ncs_hang.started;
}
