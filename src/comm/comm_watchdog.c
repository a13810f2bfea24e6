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

enum { CUDA_ERROR_NOT_READY = 600, MAX_FAILURES_PER_PASS = 16 };

/* What one look at a communicator found wrong. */
typedef struct verdict {
  ncclshim_status status; /* TIMEOUT, NCCL_ERROR or CUDA_ERROR */
  ncclResult_t code;
  char text[640];
} verdict;

static void describe(const ncclshim_watch_slot *slot, int64_t now, char *buf, size_t size) {
  snprintf(buf, size, "%s #%llu (count %zu, %s), which had run %lld ms", slot->call,
           (unsigned long long)slot->seq, slot->count,
           ncclshim_nccl_type_name((ncclDataType_t)slot->type),
           (long long)((now - slot->start_ns) / 1000000));
}

/* Retire the operations whose events fired; copy the oldest one still running into *oldest.
 * Returns 1 when one is, 0 when none, -1 (with *v filled) when cuEventQuery failed. */
static int oldest_running(ncclshim_watchdog *dog, ncclshim_watch *w, ncclshim_watch_slot *oldest,
                          verdict *v, int64_t now) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(dog->cuda);
  int found = 0;
  pthread_mutex_lock(&w->lock);
  while (w->outstanding > 0) {
    ncclshim_watch_slot *slot = &w->slots[w->oldest];
    ncclshim_cu_result r = t->cuEventQuery(slot->event);
    if (r == 0) {
      w->oldest = (w->oldest + 1) % NCCLSHIM_WATCH_EVENTS;
      w->outstanding--;
      continue;
    }
    *oldest = *slot;
    found = 1;
    if (r != CUDA_ERROR_NOT_READY) {
      char what[256];
      describe(slot, now, what, sizeof(what));
      v->status = NCCLSHIM_CUDA_ERROR;
      v->code = ncclUnhandledCudaError;
      snprintf(v->text, sizeof(v->text), "cuEventQuery failed with %s (%d) for %s",
               ncclshim_cuda_result_name(dog->cuda, r), (int)r, what);
      found = -1;
    }
    break;
  }
  pthread_mutex_unlock(&w->lock);
  return found;
}

/* Look at one communicator; 1 with *v filled when it must be failed. */
static int inspect(ncclshim_watchdog *dog, ncclshim_watch *w, CUcontext *current, verdict *v) {
  ncclshim_comm *comm = w->comm;
  if (ncclshim_comm_get_state(comm) != NCCLSHIM_COMM_READY) return 0;
  if (*current != w->context &&
      ncclshim_cuda_functions(dog->cuda)->cuCtxSetCurrent(w->context) == 0)
    *current = w->context;
  int64_t now = ncclshim_now_ns();
  ncclshim_watch_slot oldest;
  int running = oldest_running(dog, w, &oldest, v, now);
  if (running < 0) return 1;
  char what[256] = "no recorded operation outstanding";
  if (running) describe(&oldest, now, what, sizeof(what));
  /* Under the lock: an abort started meanwhile (not READY) may have freed NCCL's comm. */
  ncclResult_t r = ncclSuccess, async = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (comm->state == NCCLSHIM_COMM_READY)
    r = ncclshim_nccl_functions(comm->nccl)->ncclCommGetAsyncError(comm->comm, &async);
  pthread_mutex_unlock(&comm->lock);
  if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
    ncclResult_t code = r != ncclSuccess ? r : async;
    v->status = NCCLSHIM_NCCL_ERROR;
    v->code = code;
    snprintf(v->text, sizeof(v->text), "%s reported %s (%d) during %s",
             r != ncclSuccess ? "ncclCommGetAsyncError itself" : "ncclCommGetAsyncError",
             ncclshim_nccl_result_name(code), (int)code, what);
    return 1;
  }
  if (running && now - oldest.start_ns > w->timeout_ns) {
    v->status = NCCLSHIM_TIMEOUT;
    v->code = ncclInProgress;
    snprintf(v->text, sizeof(v->text), "%s, past its deadline of %lld ms", what,
             (long long)(w->timeout_ns / 1000000));
    return 1;
  }
  return 0;
}

/* Mark it FAILED with the message and start the abort; 0 when another thread changed its
 * state first (nothing done). */
static int fail(ncclshim_comm *comm, const verdict *v) {
  pthread_mutex_lock(&comm->lock);
  int ours = comm->state == NCCLSHIM_COMM_READY;
  if (ours) {
    comm->state = NCCLSHIM_COMM_FAILED;
    comm->failure = v->code;
    comm->failed_status = v->status;
    int rc = comm->abort_started ? 0 : ncclshim_comm_abort_start(comm);
    snprintf(comm->reason, sizeof(comm->reason), "%s; %s", v->text,
             rc == 0 ? "the watchdog started ncclCommAbort"
                     : "the watchdog could not start a thread for ncclCommAbort");
    atomic_store(&comm->failed_by_watchdog, 1);
  }
  pthread_mutex_unlock(&comm->lock);
  return ours;
}

/* One pass over the watches, with the lock held; the communicators it failed, referenced,
 * go to failed[] for the callback (called without the lock). */
static int pass(ncclshim_watchdog *dog, CUcontext *current, ncclshim_comm **failed) {
  int n = 0;
  for (ncclshim_watch *w = dog->watches; w != NULL && n < MAX_FAILURES_PER_PASS; w = w->next) {
    verdict v;
    if (inspect(dog, w, current, &v) && fail(w->comm, &v)) {
      ncclshim_comm_ref(w->comm);
      failed[n++] = w->comm;
    }
  }
  return n;
}

static void *watchdog_thread(void *arg) {
  ncclshim_watchdog *dog = arg;
  CUcontext current = NULL;
  pthread_mutex_lock(&dog->lock);
  while (!dog->stop) {
    ncclshim_comm *failed[MAX_FAILURES_PER_PASS];
    int n = pass(dog, &current, failed);
    if (n > 0) {
      pthread_mutex_unlock(&dog->lock);
      for (int i = 0; i < n; i++) {
        if (dog->on_failure != NULL)
          dog->on_failure(failed[i], failed[i]->failed_status, failed[i]->reason, dog->user);
        ncclshim_comm_unref(failed[i]);
      }
      pthread_mutex_lock(&dog->lock);
    }
    int64_t until = ncclshim_now_ns() + dog->interval_ns;
    struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    while (!dog->stop && pthread_cond_timedwait(&dog->wake, &dog->lock, &ts) != ETIMEDOUT) {
    }
  }
  pthread_mutex_unlock(&dog->lock);
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
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_watchdog_start: %s", problem);
  ncclshim_watchdog *dog = calloc(1, sizeof(*dog));
  if (dog == NULL || !init_sync(dog)) {
    free(dog);
    return ncclshim_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_watchdog_start: out of memory");
  }
  dog->interval_ns = (int64_t)options->interval_ms * 1000000;
  dog->cuda = options->cuda != NULL ? options->cuda : ncclshim_cuda_default();
  dog->on_failure = options->on_failure;
  dog->user = options->user;
  int rc = pthread_create(&dog->thread, NULL, watchdog_thread, dog);
  if (rc != 0) {
    pthread_cond_destroy(&dog->wake);
    pthread_mutex_destroy(&dog->lock);
    free(dog);
    return ncclshim_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_watchdog_start: no thread: %s",
                         strerror(rc));
  }
  *out = dog;
  return NCCLSHIM_OK;
}

void ncclshim_watchdog_stop(ncclshim_watchdog *dog) {
  if (dog == NULL) return;
  pthread_mutex_lock(&dog->lock);
  dog->stop = 1;
  pthread_cond_broadcast(&dog->wake);
  pthread_mutex_unlock(&dog->lock);
  pthread_join(dog->thread, NULL);
  while (dog->watches != NULL) {
    ncclshim_watch *w = dog->watches;
    dog->watches = w->next;
    atomic_store(&w->comm->watch, NULL);
    ncclshim_watch_free(w);
  }
  pthread_cond_destroy(&dog->wake);
  pthread_mutex_destroy(&dog->lock);
  free(dog);
}
