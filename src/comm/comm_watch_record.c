/* The enqueueing thread's step per operation (ncclshim_comm_record) and per graph replay
 * (ncclshim_comm_record_graph): it asks whether the stream captures, then records the
 * operation's event (src/track; shared with this thread's operations on the stream since the
 * last look). */
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

_Static_assert(NCCLSHIM_WATCH_LABEL_MAX + 1 == NCS_TRACK_LABEL_BYTES, "a label fits the tracker's");

/* Copy `label` into `out` (NCS_TRACK_LABEL_BYTES), reading no further than the bound; a
 * longer one is cut on a UTF-8 character boundary and ends in "...". */
static void copy_label(char *out, const char *label) {
  size_t n = strnlen(label, NCCLSHIM_WATCH_LABEL_MAX + 1);
  if (n > NCCLSHIM_WATCH_LABEL_MAX) {
    n = NCCLSHIM_WATCH_LABEL_MAX - 3;
    while (n > 0 && ((unsigned char)label[n] & 0xC0) == 0x80) n--; /* a continuation byte */
    memcpy(out, label, n);
    memcpy(out + n, "...", 4);
    return;
  }
  memcpy(out, label, n);
  out[n] = '\0';
}

/* An operation (call != NULL) or a replay (label): captured, or covered by an event of its
 * own, recorded here on the program's thread (the only place a watch names its stream). */
static ncclshim_status mark(ncclshim_comm *comm, CUstream stream, const char *call,
                            const char *label, size_t count, int type, const char *who) {
  if (comm == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: comm is NULL", who);
  if (atomic_load(&comm->failed_by_watchdog)) return ncs_comm_failed(comm, who);
  ncclshim_status status = NCCLSHIM_OK;
  ncs_watch *w = pin(comm, who, &status);
  if (w == NULL) return status;
  ncclshim_cu_result r = 0;
  int capturing = ncs_track_capturing(&w->dog->driver, stream, &r);
  if (capturing > 0) {
    w->counts.captured++;
    unpin(comm, w);
    return NCCLSHIM_OK;
  }
  ncs_track_op op; /* the label's 64 bytes are written only for a replay */
  ncs_track_op_set(&op, call, count, type, ++w->seq, 0, 1, NULL);
  if (label != NULL) copy_label(op.label, label);
  ncs_track_failure why = {"cuStreamIsCapturing", r};
  int recorded = capturing == 0 && ncs_track_record(w->track, stream, &op, &why) == 0;
  w->counts.recorded++;
  w->counts.replays += call == NULL;
  w->counts.events += (uint64_t)recorded;
  unpin(comm, w);
  if (recorded) return NCCLSHIM_OK;
  /* Not watched: the program hears it now, naming the operation. */
  const char *name = call != NULL ? call : "the replay of CUDA graph";
  if (why.result == 0) /* no memory for a node or a context's pool */
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY,
                    "%s: out of memory: %s #%llu on stream %p is not watched", who, name,
                    (unsigned long long)op.seq, (void *)stream);
  return ncs_fail(NCCLSHIM_CUDA_ERROR,
                  "%s: %s failed: %s (%d): %s #%llu on stream %p is not watched", who, why.call,
                  ncclshim_cuda_result_name(w->cuda, why.result), (int)why.result, name,
                  (unsigned long long)op.seq, (void *)stream);
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
  ncs_track_counts tracked = ncs_track_counts_of(w->track);
  *out = w->counts;
  out->captured += tracked.captured;
  out->outstanding = tracked.outstanding;
  out->size = size;
  unpin(comm, w);
  return NCCLSHIM_OK;
}
