/* The enqueueing thread's step per operation (ncclshim_comm_record) and per graph replay
 * (ncclshim_comm_record_graph). An operation shares the next event with those before it
 * while the stream's newest event is pending (no driver call: the cheap path); otherwise
 * it asks whether the stream captures, then records an event. */
#include <stdio.h>
#include <string.h>

#include "comm_watch.h"

/* Pin the communicator's watch for this call: NULL with the status when it has none, or
 * another thread holds the pin. */
static ncs_watch *pin(ncclshim_comm *comm, const char *who, ncclshim_status *status) {
  ncs_watch *link = atomic_load(&comm->watch);
  for (;;) {
    if (link == NULL || ((uintptr_t)link & WATCH_PINNED)) {
      *status = ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator (rank %d of %d) %s", who,
                         comm->rank, comm->nranks,
                         link == NULL ? "is not watched (ncclshim_comm_watch)"
                                      : "is recorded on by another thread at the same time");
      return NULL;
    }
    ncs_watch *pinned = (ncs_watch *)((uintptr_t)link | WATCH_PINNED);
    if (atomic_compare_exchange_weak(&comm->watch, &link, pinned)) return link;
  }
}

static void unpin(ncclshim_comm *comm, ncs_watch *watch) {
  ncs_watch *expected = (ncs_watch *)((uintptr_t)watch | WATCH_PINNED);
  if (!atomic_compare_exchange_strong(&comm->watch, &expected, watch))
    ncs_watch_unref(watch); /* unwatched meanwhile: the link's reference was left to us */
}

/* May this operation wait for a later event? Under the lock. No clock is read here: the
 * watchdog's pass closes a waiting group whose span reached close_ns (comm_watch_pass.c). */
static int can_share(const ncs_watch *w, CUstream stream) {
  /* The per-thread default stream names another stream on the watchdog's thread: a catch-up
   * there would cover nothing. */
  if (stream == NCCLSHIM_CU_STREAM_PER_THREAD) return 0;
  if (w->waiting.n > 0 && w->waiting.stream != stream) return 0;
  if (w->outstanding == NCCLSHIM_WATCH_EVENTS) return 1; /* no free event: wait for one */
  if (w->outstanding == 0 || w->newest_stream != stream) return 0;
  return w->waiting.n == 0 || w->closed_seq != w->waiting.first_seq;
}

static void describe_op(ncs_watch_ops *ops, CUstream stream, const char *call, size_t count,
                        int type, uint64_t seq, int64_t now) {
  ops->stream = stream;
  ops->call = call;
  ops->count = count;
  ops->type = type;
  ops->first_seq = ops->last_seq = seq;
  ops->n = 1;
  ops->start_ns = now;
}

/* Record one event after `ops` on the stream (not capturing); the lock not held. */
static ncclshim_status record_event(ncs_watch *w, CUstream stream, ncs_watch_ops *ops,
                                    const char *who) {
  watch_lock(w);
  if (w->outstanding == NCCLSHIM_WATCH_EVENTS) { /* the watchdog took the last free one */
    if (w->waiting.n == 0) {
      w->waiting = *ops;
    } else if (w->waiting.stream == stream) {
      w->waiting.last_seq = ops->last_seq;
      w->waiting.n += ops->n;
    } else {
      w->counts.outstanding -= ops->n; /* no event for them: not watched */
    }
    watch_unlock(w);
    return NCCLSHIM_OK;
  }
  ncs_watch_slot *slot = ncs_watch_reserve(w, ops);
  watch_unlock(w);
  ncclshim_cu_result r = ncclshim_cuda_functions(w->cuda)->cuEventRecord(slot->event, stream);
  ncs_watch_publish(w, slot, r, 0);
  if (r == 0) return NCCLSHIM_OK;
  return ncs_fail(NCCLSHIM_CUDA_ERROR, "%s: cuEventRecord failed: %s (%d)", who,
                  ncclshim_cuda_result_name(w->cuda, r), (int)r);
}

/* An operation (call != NULL) or a replay (label): shared, captured, or recorded. */
static ncclshim_status mark(ncclshim_comm *comm, CUstream stream, const char *call,
                            const char *label, size_t count, int type, const char *who) {
  if (comm == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: comm is NULL", who);
  if (atomic_load(&comm->failed_by_watchdog)) return ncs_comm_failed(comm, who);
  ncclshim_status status = NCCLSHIM_OK;
  ncs_watch *w = pin(comm, who, &status);
  if (w == NULL) return status;
  watch_lock(w);
  if (call != NULL && can_share(w, stream)) {
    uint64_t seq = ++w->seq;
    if (w->waiting.n++ == 0) { /* the only shared record that reads the clock */
      describe_op(&w->waiting, stream, call, count, type, seq, ncs_now_ns());
    } else {
      w->waiting.last_seq = seq;
    }
    w->counts.recorded++;
    w->counts.outstanding++;
    watch_unlock(w);
    unpin(comm, w);
    return NCCLSHIM_OK;
  }
  watch_unlock(w);
  int64_t now = ncs_now_ns();
  ncclshim_cu_result r = 0;
  int capturing = ncs_stream_capturing(w->cuda, stream, &r);
  watch_lock(w);
  if (capturing != 0) {
    w->counts.captured += capturing > 0;
    watch_unlock(w);
    unpin(comm, w);
    if (capturing > 0) return NCCLSHIM_OK;
    return ncs_fail(NCCLSHIM_CUDA_ERROR, "%s: cuStreamIsCapturing(%p) failed: %s (%d)", who,
                    (void *)stream, ncclshim_cuda_result_name(w->cuda, r), (int)r);
  }
  /* The operations waiting on this stream go first: under this event (an operation) or an
   * event of their own before the replay's (which keeps its label in a failure). */
  ncs_watch_ops before = {0}, ops = {0};
  if (w->waiting.n > 0 && w->waiting.stream == stream) {
    before = w->waiting;
    w->waiting.n = 0;
  }
  describe_op(&ops, stream, call, count, type, ++w->seq, now);
  if (label != NULL) { /* read no further than the bound */
    snprintf(ops.label, sizeof(ops.label), "%.*s", NCCLSHIM_WATCH_LABEL_MAX, label);
    if (strnlen(label, NCCLSHIM_WATCH_LABEL_MAX + 1) > NCCLSHIM_WATCH_LABEL_MAX)
      memcpy(ops.label + NCCLSHIM_WATCH_LABEL_MAX - 3, "...", 3);
  }
  if (call != NULL && before.n > 0) {
    before.last_seq = ops.last_seq;
    before.n++;
    ops = before;
    before.n = 0;
  }
  w->counts.recorded++;
  w->counts.replays += call == NULL;
  w->counts.outstanding++;
  watch_unlock(w);
  if (before.n > 0) status = record_event(w, stream, &before, who);
  ncclshim_status last = record_event(w, stream, &ops, who);
  unpin(comm, w);
  return status != NCCLSHIM_OK ? status : last;
}

ncclshim_status ncclshim_comm_record(ncclshim_comm *comm, CUstream stream, const char *call,
                                     size_t count, ncclDataType_t type) {
  return mark(comm, stream, call != NULL ? call : "an NCCL operation", NULL, count, (int)type,
              "ncclshim_comm_record");
}

ncclshim_status ncclshim_comm_record_graph(ncclshim_comm *comm, CUstream stream, const char *label,
                                           int ops) {
  static const char who[] = "ncclshim_comm_record_graph";
  if (ops < 0)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: ops is %d (the graph's collectives, >= 0)", who,
                    ops);
  return mark(comm, stream, NULL, label != NULL ? label : "unnamed", (size_t)ops, 0, who);
}

ncclshim_status ncclshim_comm_watch_counts(ncclshim_comm *comm, ncclshim_watch_counts *out) {
  static const char who[] = "ncclshim_comm_watch_counts";
  if (comm == NULL || out == NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: %s is NULL", who,
                    comm == NULL ? "comm" : "out");
  size_t size = out->size;
  if (size < sizeof(ncclshim_watch_counts)) /* the first version: every field of today's */
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "%s: out->size is %zu, below %zu (NCCLSHIM_WATCH_COUNTS_INIT)", who, size,
                    sizeof(ncclshim_watch_counts));
  ncclshim_status status = NCCLSHIM_OK;
  ncs_watch *w = pin(comm, who, &status);
  if (w == NULL) return status;
  watch_lock(w);
  *out = w->counts;
  watch_unlock(w);
  out->size = size;
  unpin(comm, w);
  return NCCLSHIM_OK;
}
