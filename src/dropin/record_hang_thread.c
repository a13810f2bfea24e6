/* The hang dump's checking thread: every interval it looks at the tracker (src/track), which
 * queries the events of the operations not yet seen complete, oldest first; it dumps once
 * when the oldest is not complete N ms after a look first saw it (the tracker's stamp: never
 * before its record, at most one interval after; the next look is aimed at that limit). It
 * never names a program's stream: the events were recorded inside the program's own calls
 * (record_hang.c). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "record_hang_thread.h"
#include "record_state.h"
#include "say.h"

static struct {
  pthread_mutex_t lock; /* guards the fields below but `live` and `off` */
  pthread_cond_t wake;  /* CLOCK_MONOTONIC: the stop */
  ncs_tracker *tracker;
  pid_t pid; /* the process whose thread this is */
  int started, stop;
  pthread_t thread;
  _Atomic(ncs_tracker *) live; /* the tracker while the thread checks it, else NULL */
  atomic_int off;              /* fired, stopped, or no thread: nothing more is recorded */
} hang = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Dump, once; the line on stderr names the call (and the operations of its group on its
 * stream, which one event covers) and how long it has been pending. */
static void fire(const rec_state *r, const ncs_track_seen *seen) {
  char note[240], others[120] = "";
  if (seen->op.n > 1)
    snprintf(others, sizeof(others), " or one of the %llu after it on that stream (one event)",
             (unsigned long long)seen->op.n - 1);
  snprintf(note, sizeof(note), " (hang: %s #%llu%s not complete after %d ms)",
           ncclshim_nccl_function_name(seen->op.type), (unsigned long long)seen->op.seq, others,
           r->hang_ms);
  ncs_rec_dump_hang(seen->op.type, r->hang_ms, seen->op.index, seen->op.n, note);
}

/* A query that failed: that operation is no longer watched; said once per answer. */
static void say_query_failed(const ncs_track_seen *seen) {
  static int said[16];
  int slot = (int)((unsigned)seen->why.result % 16);
  if (said[slot] == (int)seen->why.result + 1) return;
  said[slot] = (int)seen->why.result + 1;
  char what[200];
  snprintf(what, sizeof(what), "%s #%llu: cuEventQuery answered %d",
           ncclshim_nccl_function_name(seen->op.type), (unsigned long long)seen->op.seq,
           (int)seen->why.result);
  ncs_rec_say("hang dump: ", what,
              "; that operation is no longer watched (later ones with this answer are not said)",
              0);
}

static void *check(void *arg) {
  ncs_tracker *t = arg;
  rec_state *r = ncs_rec;
  const ncs_track_driver *d = ncs_rec_driver();
  uint64_t limit = (uint64_t)r->hang_ms * 1000000u;
  /* How often it looks: a twentieth of the limit, at most 100 ms. */
  uint64_t interval = limit / 20 < 100000000u ? limit / 20 : 100000000u;
  CUcontext current = NULL;
  /* Thread-local capture mode: this thread's queries never invalidate a graph capture that
   * another thread began in global mode (torch.cuda.graph's default). */
  int mode = NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  if (d->cuThreadExchangeStreamCaptureMode != NULL) d->cuThreadExchangeStreamCaptureMode(&mode);
  pthread_mutex_lock(&hang.lock);
  while (!hang.stop) {
    pthread_mutex_unlock(&hang.lock);
    ncs_track_seen seen;
    int something = ncs_track_look(t, &current, &seen);
    uint64_t now = (uint64_t)ncs_track_now_ns(), due = now + interval;
    if (something && seen.failed) say_query_failed(&seen);
    if (something && seen.pending) {
      uint64_t deadline = (uint64_t)seen.start_ns + limit;
      if (now >= deadline) {
        atomic_store(&hang.off, 1);
        atomic_store(&hang.live, NULL);
        fire(r, &seen);
        pthread_mutex_lock(&hang.lock);
        break;
      }
      if (deadline < due) due = deadline;
    }
    pthread_mutex_lock(&hang.lock);
    if (something && seen.failed) continue; /* look on at once: the rest of the queue */
    struct timespec until = {.tv_sec = (time_t)(due / 1000000000u),
                             .tv_nsec = (long)(due % 1000000000u)};
    if (!hang.stop) pthread_cond_timedwait(&hang.wake, &hang.lock, &until);
  }
  pthread_mutex_unlock(&hang.lock);
  return NULL;
}

/* At exit or dlclose, before the driver or this library goes: the thread ends first. */
static void stop_checking(void) {
  atomic_store(&hang.off, 1);
  atomic_store(&hang.live, NULL);
  pthread_mutex_lock(&hang.lock);
  int joinable = hang.started && hang.pid == getpid();
  hang.stop = 1;
  pthread_cond_signal(&hang.wake);
  pthread_mutex_unlock(&hang.lock);
  if (joinable) pthread_join(hang.thread, NULL);
}

/* Under the lock: start the thread in this process, with a tracker of its own. The tracker
 * lives as long as the process (records may still come from other threads at exit). */
static void start(const ncs_track_driver *d) {
  hang.stop = 0;
  hang.pid = getpid();
  hang.tracker = ncs_track_create(d); /* a forked child's parent one is left: its events
                                         belong to the parent's driver state */
  int error = hang.tracker == NULL ? 12 /* ENOMEM */ : 0;
  if (error == 0) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&hang.wake, &attr);
    pthread_condattr_destroy(&attr);
    error = pthread_create(&hang.thread, NULL, check, hang.tracker);
  }
  hang.started = error == 0;
  if (!hang.started) { /* said once; no event is recorded from now on */
    atomic_store(&hang.off, 1);
    ncs_rec_say("no hang dump: its thread could not be started", "", "", error);
    return;
  }
  static int registered;
  if (!registered) registered = atexit(stop_checking) == 0;
  atomic_store_explicit(&hang.live, hang.tracker, memory_order_release);
}

ncs_tracker *ncs_hang_tracker(const ncs_track_driver *d) {
  ncs_tracker *t = atomic_load_explicit(&hang.live, memory_order_acquire);
  if (t != NULL || atomic_load_explicit(&hang.off, memory_order_relaxed)) return t;
  pthread_mutex_lock(&hang.lock);
  if (!atomic_load(&hang.off) && (!hang.started || hang.pid != getpid())) start(d);
  t = atomic_load(&hang.live);
  pthread_mutex_unlock(&hang.lock);
  return t;
}

void ncs_hang_thread_forked(void) {
  pthread_mutex_init(&hang.lock, NULL);
  atomic_store(&hang.live, NULL);
  atomic_store(&hang.off, 0);
}
