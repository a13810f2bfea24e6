/* The hang dump (NCCLSHIM_RECORD_HANG_MS=N), its enqueueing side: each recorded operation
 * that is not captured into a graph is covered by a CUDA event on its stream, recorded once
 * it is enqueued (for a group, at ncclGroupEnd, when NCCL launches it). The checking thread
 * (record_hang_thread.c) dumps once, reason "hang", when the oldest event has not completed N
 * ms after it was recorded, and says so in one line on stderr. It does nothing else: aborting
 * is the program's own watchdog's decision. Off (no N), nothing here runs.
 *
 * Operations share events, as the watchdog's records do (src/comm/comm_watch_record.c):
 * while its stream's newest event is still in the queue, an operation waits for the next
 * event on that stream, with no driver call and no clock. The next operation that records
 * there covers the waiting ones; when none comes, the checking thread records one for them
 * once the newest has left the queue. The deadline runs from each event's record, so a dump
 * is never early; it may be late for waiting operations by the time their stream's newest
 * event took to complete. An event that covers several operations says which ones, and
 * that what is stuck may be work the program enqueued there after them: the thread's event
 * comes after whatever the stream held by then.
 * The legacy and per-thread default streams never share: the checking thread's own would
 * be another stream. */
#include <stdint.h>

#include "dropin.h"
#include "record.h"
#include "record_hang.h"
#include "record_hang_queue.h"
#include "record_hang_thread.h"

/* Under the lock: the row of a stream whose operations may share events, or NULL. */
static ncs_hang_stream *sharing(const void *stream) {
  if (stream == NULL || stream == NCCLSHIM_CU_STREAM_LEGACY ||
      stream == NCCLSHIM_CU_STREAM_PER_THREAD)
    return NULL;
  return ncs_hang_stream_of(stream, 1);
}

static void watch(const void *stream, int fn, uint64_t index, uint64_t seq) {
  const rec_driver *d = ncs_rec_driver();
  if (d == NULL) return;
  pthread_mutex_lock(&ncs_hang.lock);
  if (ncs_hang.forked) { /* a forked child forgets its parent's entries first */
    ncs_hang.forked = 0;
    if (ncs_hang.started) ncs_hang_ready();
  }
  ncs_hang_stream *s = ncs_hang.fired || ncs_hang.stop ? NULL : sharing(stream);
  if (s != NULL && ncs_hang_pending(s)) { /* the cheap path: wait for the stream's next event */
    if (s->waits++ == 0) {
      s->waiting =
          (ncs_hang_entry){.stream = stream, .index = index, .seq = seq, .last_seq = seq, .fn = fn};
    } else {
      s->waiting.after++;
      s->waiting.last_seq = seq;
    }
    pthread_mutex_unlock(&ncs_hang.lock);
    return;
  }
  int wanted = !ncs_hang.fired && !ncs_hang.stop;
  ncs_hang_entry e = {.stream = stream, .index = index, .seq = seq, .last_seq = seq, .fn = fn};
  if (s != NULL && s->waits) { /* the waiting operations go under this event, first */
    e = s->waiting;
    e.after++;
    e.last_seq = seq;
    s->waits = 0;
  }
  pthread_mutex_unlock(&ncs_hang.lock);
  if (!wanted || d->ctx_get(&e.ctx) != NCCLSHIM_CUDA_SUCCESS) return;
  pthread_mutex_lock(&ncs_hang.lock);
  CUevent event = ncs_hang_spare(e.ctx);
  pthread_mutex_unlock(&ncs_hang.lock);
  if (!ncs_hang_record(d, &e, event)) return;
  pthread_mutex_lock(&ncs_hang.lock);
  if (ncs_hang_ready()) {
    uint64_t id = ncs_hang_push(d, &e);
    if ((s = sharing(stream)) != NULL) {
      s->newest = id;
      s->ctx = e.ctx;
    }
  } else {
    d->event_destroy(e.event);
  }
  pthread_mutex_unlock(&ncs_hang.lock);
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

/* From the recorder's pthread_atfork child handler: no getpid() per call (a system call)
 * to find out. */
void ncs_rec_hang_forked(void) {
  pthread_mutex_init(&ncs_hang.lock, NULL);
  ncs_hang.forked = 1;
}
