/* The hang dump (NCCLSHIM_RECORD_HANG_MS=N): each recorded operation that is not captured
 * into a graph gets a CUDA event on its stream once it is enqueued (for a group, at
 * ncclGroupEnd, when NCCL launches it). One thread checks the oldest event; when it has not
 * completed N ms after its call, the process dumps once, reason "hang", and says so in one
 * line on stderr. It does nothing else: aborting is the program's own watchdog's decision.
 * Off (no N), nothing here runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"
#include "ncclshim/cuda_abi.h"
#include "record.h"
#include "record_cuda.h"
#include "record_hang.h"
#include "record_state.h"
#include "say.h"

enum { SLOTS = 4096, EVENT_DISABLE_TIMING = 2, CAPTURE_MODE_THREAD_LOCAL = 1 };

typedef struct pending {
  CUevent event;
  CUcontext ctx;
  uint64_t since_ns; /* CLOCK_MONOTONIC at the call */
  uint64_t index;    /* the call's place in the ring, plus one */
  uint64_t seq;
  int fn;
} pending;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake; /* CLOCK_MONOTONIC */
  pending queue[SLOTS];
  size_t head, count;
  CUevent spare[SLOTS];
  size_t spares;
  pid_t pid; /* the process whose thread this is: a forked child starts afresh */
  int started, stop, fired;
  pthread_t thread;
} hang = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void wait_until(uint64_t ns) {
  struct timespec t = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
  pthread_cond_timedwait(&hang.wake, &hang.lock, &t);
}

/* Dump, once; the line on stderr names the call and how long it has been pending. */
static void fire(const rec_state *r, const pending *p) {
  char note[160];
  snprintf(note, sizeof(note), " (hang: %s #%llu not complete after %d ms)",
           ncclshim_nccl_function_name(p->fn), (unsigned long long)p->seq, r->hang_ms);
  ncs_rec_dump_hang(p->fn, r->hang_ms, p->index, note);
}

/* Under the lock: the oldest entry leaves the queue; a completed event is kept for reuse. */
static void pop(int completed) {
  pending *p = &hang.queue[hang.head];
  if (completed && hang.spares < SLOTS) hang.spare[hang.spares++] = p->event;
  hang.head = (hang.head + 1) % SLOTS;
  hang.count--;
}

static void *check(void *unused) {
  (void)unused;
  rec_state *r = ncs_rec;
  const rec_driver *d = ncs_rec_driver();
  uint64_t limit = (uint64_t)r->hang_ms * 1000000u;
  /* Completed events are taken off at this pace, so that the queue never fills up. */
  uint64_t interval = limit / 4 < 100000000u ? limit / 4 : 100000000u;
  CUcontext current = NULL;
  /* Thread-local capture mode: this thread's queries never invalidate a graph capture that
   * another thread began in global mode (torch.cuda.graph's default). */
  int mode = CAPTURE_MODE_THREAD_LOCAL;
  if (d->exchange_capture_mode != NULL) d->exchange_capture_mode(&mode);
  pthread_mutex_lock(&hang.lock);
  while (!hang.stop && !hang.fired) {
    if (hang.count == 0) {
      pthread_cond_wait(&hang.wake, &hang.lock);
      continue;
    }
    pending p = hang.queue[hang.head];
    pthread_mutex_unlock(&hang.lock);
    if (p.ctx != current && d->ctx_set(p.ctx) == NCCLSHIM_CUDA_SUCCESS) current = p.ctx;
    ncclshim_cu_result answer = d->event_query(p.event);
    uint64_t now = now_ns();
    pthread_mutex_lock(&hang.lock);
    if (hang.count == 0 || hang.queue[hang.head].index != p.index) continue;
    if (answer != NCCLSHIM_CUDA_ERROR_NOT_READY) {
      /* Completed, or an event the driver no longer knows (its context ended): either way
       * not a hang. */
      pop(answer == NCCLSHIM_CUDA_SUCCESS);
    } else if (now - p.since_ns >= limit) {
      hang.fired = 1;
      pthread_mutex_unlock(&hang.lock);
      fire(r, &p);
      pthread_mutex_lock(&hang.lock);
    } else {
      uint64_t due = p.since_ns + limit;
      wait_until(due < now + interval ? due : now + interval);
    }
  }
  pthread_mutex_unlock(&hang.lock);
  return NULL;
}

/* At exit or dlclose, before the driver or this library goes: the thread ends first. */
static void stop_checking(void) {
  pthread_mutex_lock(&hang.lock);
  int joinable = hang.started && hang.pid == getpid();
  hang.stop = 1;
  pthread_cond_signal(&hang.wake);
  pthread_mutex_unlock(&hang.lock);
  if (joinable) pthread_join(hang.thread, NULL);
}

/* Under the lock. A forked child has no thread and none of its parent's events. */
static int ready(void) {
  if (hang.started && hang.pid == getpid()) return 1;
  if (hang.started) { /* a forked child: the parent's thread and events are not its own */
    hang.head = hang.count = hang.spares = 0;
    hang.fired = hang.stop = 0;
  }
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&hang.wake, &attr);
  pthread_condattr_destroy(&attr);
  hang.pid = getpid();
  int error = pthread_create(&hang.thread, NULL, check, NULL);
  hang.started = error == 0;
  if (!hang.started) { /* said once; no event is recorded from now on */
    hang.stop = 1;
    ncs_rec_say("no hang dump: its thread could not be started", "", "", error);
  }
  static int registered;
  if (hang.started && !registered) registered = atexit(stop_checking) == 0;
  return hang.started;
}

static void watch(const void *stream, int fn, uint64_t index, uint64_t seq) {
  const rec_driver *d = ncs_rec_driver();
  if (d == NULL) return;
  uint64_t since = now_ns();
  CUevent event = NULL;
  pthread_mutex_lock(&hang.lock);
  if (hang.pid != getpid() && hang.started) ready(); /* forget the parent's events first */
  int wanted = !hang.fired && !hang.stop;
  if (wanted && hang.spares > 0) event = hang.spare[--hang.spares];
  pthread_mutex_unlock(&hang.lock);
  if (!wanted) return;
  CUcontext ctx = NULL;
  if ((event == NULL && d->event_create(&event, EVENT_DISABLE_TIMING) != NCCLSHIM_CUDA_SUCCESS) ||
      d->ctx_get(&ctx) != NCCLSHIM_CUDA_SUCCESS ||
      d->event_record(event, (CUstream)stream) != NCCLSHIM_CUDA_SUCCESS) {
    if (event != NULL) d->event_destroy(event);
    return;
  }
  pending p = {.event = event, .ctx = ctx, .since_ns = since, .index = index, .seq = seq, .fn = fn};
  pthread_mutex_lock(&hang.lock);
  if (ready()) {
    if (hang.count == SLOTS) { /* full: the newest gives way; the oldest hold the deadline */
      size_t last = (hang.head + SLOTS - 1) % SLOTS;
      d->event_destroy(hang.queue[last].event);
      hang.count--;
    }
    hang.queue[(hang.head + hang.count) % SLOTS] = p;
    if (hang.count++ == 0) pthread_cond_signal(&hang.wake);
  } else {
    d->event_destroy(event);
  }
  pthread_mutex_unlock(&hang.lock);
}

/* ---- Groups: NCCL launches a group's operations at ncclGroupEnd, so each stream's event
 * is recorded then, for the first operation of the group on it. ---- */
enum { GROUP_STREAMS = 8 };

static __thread struct {
  int depth, used;
  struct {
    const void *stream;
    int fn;
    uint64_t index, seq;
  } ops[GROUP_STREAMS];
} group NCCLSHIM_THREAD_MODEL;

void ncs_rec_hang_op(const void *stream, int fn, uint64_t index, uint64_t seq) {
  if (group.depth == 0) {
    watch(stream, fn, index, seq);
    return;
  }
  for (int i = 0; i < group.used; i++)
    if (group.ops[i].stream == stream) return;
  if (group.used == GROUP_STREAMS) return;
  group.ops[group.used].stream = stream;
  group.ops[group.used].fn = fn;
  group.ops[group.used].index = index;
  group.ops[group.used++].seq = seq;
}

void ncs_rec_hang_group(int fn, int succeeded) {
  if (fn == NCCLSHIM_FN_ncclGroupStart) {
    group.depth += succeeded;
    return;
  }
  if (group.depth == 0 || --group.depth > 0) return;
  for (int i = 0; succeeded && i < group.used; i++)
    watch(group.ops[i].stream, group.ops[i].fn, group.ops[i].index, group.ops[i].seq);
  group.used = 0;
}

void ncs_rec_hang_forked(void) { pthread_mutex_init(&hang.lock, NULL); }
