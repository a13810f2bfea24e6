/* One look at a watched communicator, on the watchdog's thread: retire the events that
 * fired, record a catch-up event after operations that no record followed, then judge the
 * oldest operation not known done against its deadline and NCCL's asynchronous error.
 * Driver calls are made without the watch's lock, so that a record blocked in the driver
 * delays nothing here. */
#include <stdio.h>

#include "comm_watch.h"

static void describe(const ncs_watch_ops *ops, int64_t now, char *buf, size_t size) {
  long long ran = (long long)((now - ops->start_ns) / 1000000);
  int n;
  if (ops->call == NULL)
    n = snprintf(buf, size,
                 "replay #%llu of CUDA graph \"%s\" (%zu collectives), which had run %lld ms",
                 (unsigned long long)ops->first_seq, ops->label, ops->count, ran);
  else
    n = snprintf(buf, size, "%s #%llu (count %zu, %s), which had run %lld ms", ops->call,
                 (unsigned long long)ops->first_seq, ops->count,
                 ncclshim_nccl_type_name((ncclDataType_t)ops->type), ran);
  if (ops->n > 1 && n > 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, " (one event covers it and the %llu after it, to #%llu)",
             (unsigned long long)(ops->n - 1), (unsigned long long)ops->last_seq);
}

/* Give a slot's operations back to the waiting ones (its event stands for a capture, not
 * for work): the next catch-up records them again. Under the lock. */
static void requeue(ncs_watch *w, ncs_watch_slot *slot, int64_t now) {
  slot->ops.start_ns = now; /* a capture answer restarts the clock */
  if (w->waiting.n == 0) {
    w->waiting = slot->ops;
  } else if (w->waiting.stream == slot->ops.stream) { /* they come first */
    ncs_watch_ops both = slot->ops;
    both.last_seq = w->waiting.last_seq;
    both.n += w->waiting.n;
    w->waiting = both;
  } else {
    w->counts.outstanding -= slot->ops.n;
  }
  slot->state = SLOT_VOID;
}

/* Retire the oldest slots whose events fired. -1 with *v filled when a query failed. */
static int retire(ncs_watch *w, ncs_watch_verdict *v, int64_t now) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(w->cuda);
  watch_lock(w);
  int found = 0;
  while (w->outstanding > 0) {
    ncs_watch_slot *slot = ncs_watch_slot_at(w, 0);
    if (slot->state == SLOT_RESERVED) break; /* its record is in progress */
    ncclshim_cu_result r = 0;
    if (slot->state == SLOT_PUBLISHED) {
      CUevent event = slot->event;
      watch_unlock(w);
      r = t->cuEventQuery(event); /* only this thread retires: the slot stays ours */
      watch_lock(w);
      if (r == NCCLSHIM_CUDA_ERROR_NOT_READY) break;
      if (ncs_cuda_capture_answer(r)) {
        requeue(w, slot, now);
        r = 0;
      } else if (r == 0) {
        w->counts.outstanding -= slot->ops.n;
      } else {
        char what[256];
        describe(&slot->ops, now, what, sizeof(what));
        v->status = NCCLSHIM_CUDA_ERROR;
        v->code = ncclUnhandledCudaError;
        snprintf(v->text, sizeof(v->text), "cuEventQuery failed with %s (%d) for %s",
                 ncclshim_cuda_result_name(w->cuda, r), (int)r, what);
        found = -1;
        break;
      }
    }
    slot->state = 0;
    w->oldest = (w->oldest + 1) % NCCLSHIM_WATCH_EVENTS;
    w->outstanding--;
  }
  watch_unlock(w);
  return found;
}

/* Does an outstanding slot hold work of `stream`? Under the lock. */
static int stream_outstanding(ncs_watch *w, CUstream stream) {
  for (unsigned i = 0; i < w->outstanding; i++)
    if (ncs_watch_slot_at(w, i)->ops.stream == stream) return 1;
  return 0;
}

/* Operations wait for an event and none of their stream is outstanding: nothing will
 * follow them unless the watchdog records one, on their stream, which must not be
 * capturing. */
static void catch_up(ncs_watch *w, int64_t now) {
  watch_lock(w);
  /* Close a group that spans close_ns: the next record records an event (records read no
   * clock to find this out). */
  if (w->waiting.n > 0 && now - w->waiting.start_ns >= w->close_ns)
    w->closed_seq = w->waiting.first_seq;
  int due = w->waiting.n > 0 && w->outstanding < NCCLSHIM_WATCH_EVENTS &&
            !stream_outstanding(w, w->waiting.stream);
  CUstream stream = w->waiting.stream;
  uint64_t first = w->waiting.first_seq;
  watch_unlock(w);
  if (!due) return;
  ncclshim_cu_result r = 0;
  int capturing = ncs_stream_capturing(w->cuda, stream, &r);
  watch_lock(w);
  int same = w->waiting.n > 0 && w->waiting.first_seq == first && w->waiting.stream == stream;
  if (same && capturing > 0) w->waiting.start_ns = ncs_now_ns(); /* held while it captures */
  if (same && capturing < 0) { /* the driver cannot tell (a stream destroyed): not watched */
    w->counts.outstanding -= w->waiting.n;
    w->waiting.n = 0;
  }
  if (!same || capturing != 0 || w->outstanding == NCCLSHIM_WATCH_EVENTS ||
      stream_outstanding(w, stream)) {
    watch_unlock(w);
    return;
  }
  ncs_watch_slot *slot = ncs_watch_reserve(w, &w->waiting);
  w->waiting.n = 0;
  watch_unlock(w);
  r = ncclshim_cuda_functions(w->cuda)->cuEventRecord(slot->event, stream);
  if (r != 0) { /* the stream may be gone: those operations are no longer watched */
    ncs_watch_publish(w, slot, r, 1);
    return;
  }
  /* A capture begun between the check and the record may hold the event: then its query
   * answers a capture error, which requeues them. */
  ncs_watch_publish(w, slot, 0, 1);
}

/* The oldest operations not known done (the oldest slot's, or those waiting for an event
 * if they began earlier): 1 with *oldest filled, 0 when none. */
static int oldest_running(ncs_watch *w, ncs_watch_ops *oldest) {
  watch_lock(w);
  const ncs_watch_ops *first = w->outstanding > 0 ? &ncs_watch_slot_at(w, 0)->ops : NULL;
  if (w->waiting.n > 0 && (first == NULL || w->waiting.start_ns < first->start_ns))
    first = &w->waiting;
  if (first != NULL) *oldest = *first;
  watch_unlock(w);
  return first != NULL;
}

int ncs_watch_inspect(ncs_watch *w, CUcontext *current, ncs_watch_verdict *v) {
  ncclshim_comm *comm = w->comm;
  if (atomic_load(&w->unwatched) || ncs_comm_get_state(comm) != NCCLSHIM_COMM_READY) return 0;
  if (*current != w->context && ncclshim_cuda_functions(w->cuda)->cuCtxSetCurrent(w->context) == 0)
    *current = w->context;
  int64_t now = ncs_now_ns();
  if (retire(w, v, now) < 0) return 1;
  catch_up(w, now);
  ncs_watch_ops oldest;
  int running = oldest_running(w, &oldest);
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
