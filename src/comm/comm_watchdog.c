/* The watchdog's thread: every interval, the events of each watched communicator's
 * outstanding operations and its asynchronous error; a hang or an error fails the
 * communicator and starts its abort (on the abort's own thread: the watchdog never blocks in
 * NCCL, so stopping it is always prompt). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_watch.h"

enum { MAX_FAILURES_PER_PASS = 16 };

/* Mark it FAILED with the message and start the abort; 0 when another thread changed its
 * state first (nothing done). */
static int fail(ncclshim_comm *comm, const ncs_watch_verdict *v) {
  pthread_mutex_lock(&comm->lock);
  int ours = comm->state == NCCLSHIM_COMM_READY;
  if (ours) {
    comm->failure = v->code;
    comm->failed_status = v->status;
    int rc = comm->abort_started ? 0 : ncs_comm_abort_start(comm);
    snprintf(comm->reason, sizeof(comm->reason), "%s; %s", v->text,
             rc == 0 ? "the watchdog started ncclCommAbort"
                     : "the watchdog could not start a thread for ncclCommAbort");
    /* The message before the state: the state is read without the lock, and whoever sees
     * FAILED must find the watchdog's message (ncclshim_comm_failure) with it. */
    atomic_store(&comm->failed_by_watchdog, 1);
    comm->state = NCCLSHIM_COMM_FAILED;
  }
  pthread_mutex_unlock(&comm->lock);
  return ours;
}

/* The watches to look at, each referenced (the array grown on the watchdog's thread only),
 * so that no pass holds the watchdog's lock while it looks. */
typedef struct seen_watches {
  ncs_watch **watch;
  size_t count, capacity;
} seen_watches;

static void take_watches(ncclshim_watchdog *dog, seen_watches *seen) {
  pthread_mutex_lock(&dog->lock);
  while (dog->nwatches > seen->capacity) {
    size_t want = dog->nwatches + 16;
    pthread_mutex_unlock(&dog->lock);
    ncs_watch **grown = realloc(seen->watch, want * sizeof(*grown));
    pthread_mutex_lock(&dog->lock);
    if (grown == NULL) break; /* look at those that fit */
    seen->watch = grown;
    seen->capacity = want;
  }
  seen->count = 0;
  for (ncs_watch *w = dog->watches; w != NULL && seen->count < seen->capacity; w = w->next) {
    ncs_watch_ref(w);
    seen->watch[seen->count++] = w;
  }
  pthread_mutex_unlock(&dog->lock);
}

/* One pass over the watches, without the watchdog's lock; the communicators it failed,
 * referenced, go to failed[] for the callback. */
static int pass(ncclshim_watchdog *dog, seen_watches *seen, CUcontext *current,
                ncclshim_comm **failed, int64_t *due_ns) {
  take_watches(dog, seen);
  int n = 0;
  for (size_t i = 0; i < seen->count; i++) {
    ncs_watch *w = seen->watch[i];
    ncs_watch_verdict v;
    if (n < MAX_FAILURES_PER_PASS && ncs_watch_inspect(w, current, &v, due_ns) &&
        fail(w->comm, &v)) {
      ncs_comm_ref(w->comm);
      failed[n++] = w->comm;
    }
    ncs_watch_unref(w);
  }
  return n;
}

/* Thread-local capture mode for every driver call of this thread (a per-thread setting, so
 * once is enough): its queries cannot invalidate another thread's global-mode capture.
 * 1 once set, or when the driver has no capture modes (before 10.1); until then it is
 * asked again before each pass (a driver not yet initialized refuses it), and the passes
 * run anyway: missing a hang is worse. */
static int thread_local_capture(const ncclshim_cuda *cuda) {
  if (!ncclshim_cuda_has_function(cuda, NCCLSHIM_CUDA_FN_cuThreadExchangeStreamCaptureMode))
    return 1;
  int mode = NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  return ncclshim_cuda_functions(cuda)->cuThreadExchangeStreamCaptureMode(&mode) == 0;
}

static void *watchdog_thread(void *arg) {
  ncclshim_watchdog *dog = arg;
  CUcontext current = NULL;
  seen_watches seen = {NULL, 0, 0};
  int mode_set = 0;
  pthread_mutex_lock(&dog->lock);
  while (!dog->stop) {
    pthread_mutex_unlock(&dog->lock);
    if (!mode_set) mode_set = thread_local_capture(dog->cuda);
    ncclshim_comm *failed[MAX_FAILURES_PER_PASS];
    /* The next pass: an interval on, or sooner at the deadline of an operation pending now
     * (its clock started at the first look that saw it, so this keeps a report within one
     * interval of the deadline). */
    int64_t due = ncs_track_now_ns() + dog->interval_ns;
    int n = pass(dog, &seen, &current, failed, &due);
    for (int i = 0; i < n; i++) {
      if (dog->on_failure != NULL)
        dog->on_failure(failed[i], failed[i]->failed_status, failed[i]->reason, dog->user);
      ncs_comm_unref(failed[i]);
    }
    pthread_mutex_lock(&dog->lock);
    struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
    while (!dog->stop && pthread_cond_timedwait(&dog->wake, &dog->lock, &ts) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&dog->lock);
  free(seen.watch);
  return NULL;
}

static int init_sync(ncclshim_watchdog *dog) {
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0) return 0;
  int ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
           pthread_cond_init(&dog->wake, &attr) == 0;
  pthread_condattr_destroy(&attr);
  if (ok && pthread_mutex_init(&dog->lock, NULL) != 0) {
    pthread_cond_destroy(&dog->wake);
    ok = 0;
  }
  return ok;
}

ncclshim_status ncclshim_watchdog_start(const ncclshim_watchdog_options *options,
                                        ncclshim_watchdog **out) {
  static const ncclshim_watchdog_options defaults = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  if (options == NULL) options = &defaults;
  const char *problem = NULL;
  if (out == NULL)
    problem = "out is NULL";
  else if (options->size < offsetof(ncclshim_watchdog_options, user) + sizeof(void *))
    problem = "options->size is too small";
  else if (options->interval_ms < 1 || options->interval_ms > 60000)
    problem = "interval_ms is outside 1 .. 60000";
  if (problem != NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_watchdog_start: %s", problem);
  ncclshim_watchdog *dog = calloc(1, sizeof(*dog));
  if (dog == NULL || !init_sync(dog)) {
    free(dog);
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_watchdog_start: out of memory");
  }
  atomic_init(&dog->refs, 1);
  dog->interval_ns = (int64_t)options->interval_ms * 1000000;
  dog->cuda = options->cuda != NULL ? options->cuda : ncclshim_cuda_default();
  ncs_track_driver_of_table(ncclshim_cuda_functions(dog->cuda), &dog->driver);
  dog->on_failure = options->on_failure;
  dog->user = options->user;
  int rc = pthread_create(&dog->thread, NULL, watchdog_thread, dog);
  if (rc != 0) {
    pthread_cond_destroy(&dog->wake);
    pthread_mutex_destroy(&dog->lock);
    free(dog);
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_watchdog_start: no thread: %s", strerror(rc));
  }
  *out = dog;
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_watchdog_stop(ncclshim_watchdog *dog) {
  if (dog == NULL) return NCCLSHIM_OK;
  if (pthread_equal(pthread_self(), dog->thread))
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_watchdog_stop: called on the watchdog's own thread (from its "
                    "callback): nothing stopped; stop it from another thread");
  pthread_mutex_lock(&dog->lock);
  dog->stop = 1;
  pthread_cond_broadcast(&dog->wake);
  pthread_mutex_unlock(&dog->lock);
  pthread_join(dog->thread, NULL);
  for (;;) {
    pthread_mutex_lock(&dog->lock);
    ncs_watch *w = dog->watches;
    if (w != NULL) {
      dog->watches = w->next;
      dog->nwatches--;
    }
    pthread_mutex_unlock(&dog->lock);
    if (w == NULL) break;
    ncs_watch *linked = ncs_watch_unlink(w->comm, w);
    if (linked != NULL) ncs_watch_unref(linked);
    ncs_watch_unref(w); /* the list's */
  }
  ncs_watchdog_unref(dog); /* freed once its last watch is */
  return NCCLSHIM_OK;
}
