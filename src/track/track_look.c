/* The tracker's look, on the one thread that looks (the watchdog's, the hang dump's): it
 * learns which events of the queue have completed, without the lock; the completed ones leave
 * the queue and their events are reused.
 *
 * A query per event would cost the program: each cuEventQuery holds the driver's lock for a
 * few hundred ns, and a recording thread's cuEventRecord waits for it (on the H200, a look
 * every 10 ms added 300 to 600 ns to every record; bench/track_cost.c). So the look asks
 * about a few events of each stream and infers the rest from the stream's order: when an
 * event has completed, so has every event recorded on the same stream before it by the same
 * thread (its program order: that record returned before this one was called; records of
 * two threads prove nothing either way, and are asked about one by one). A stream's events
 * are searched by halves, newest first: a stream whose work is done costs one query, a busy
 * one about log2(n). "The same stream" is the same handle, context and, for the handles
 * that name the calling thread's stream (NULL, per-thread), the same recording thread. A
 * handle reused by a new stream is no exception: the driver releases a destroyed stream
 * (and so its handle) only once its work has completed. */
#include <stdlib.h>

#include "track_internal.h"

enum { STREAMS_PER_LOOK = 16 };

/* 1 when a query's answer concerns a capture, never a failure: 900 .. 908, and
 * CUDA_ERROR_INVALID_VALUE, which a query of an event recorded in a capture can give. */
static int capture_answer(ncclshim_cu_result r) {
  return (r >= NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
          r <= NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) ||
         r == NCCLSHIM_CUDA_ERROR_INVALID_VALUE;
}

/* Query a RECORDED node's event, the lock not held (only this thread uses the node now). An
 * event whose query failed, or that a capture took, is destroyed: it is not reused. */
static ncclshim_cu_result query(ncs_tracker *t, ncs_track_node *node, CUcontext *current) {
  CUcontext ctx = node->pool->ctx;
  if (*current != ctx && t->d->cuCtxSetCurrent(ctx) == NCCLSHIM_CUDA_SUCCESS) *current = ctx;
  ncclshim_cu_result r = t->d->cuEventQuery(node->event);
  if (r != NCCLSHIM_CUDA_SUCCESS && r != NCCLSHIM_CUDA_ERROR_NOT_READY) {
    t->d->cuEventDestroy(node->event);
    node->event = NULL;
  }
  return r;
}

/* A final answer for `node`'s record (complete or failed; never "not ready", which can
 * change). */
static void answer(ncs_track_node *node, ncclshim_cu_result r) {
  node->answered_gen = node->gen;
  node->answer = r;
}
static int answered(const ncs_track_node *node) { return node->answered_gen == node->gen; }

/* The node's answer: the one known, else a query's (kept when final; "not ready" for the
 * rest of this look, whose epoch only this thread changes). */
static ncclshim_cu_result ask(ncs_tracker *t, ncs_track_node *node, CUcontext *current) {
  if (answered(node)) return node->answer;
  if (node->pending_in == t->epoch) return NCCLSHIM_CUDA_ERROR_NOT_READY;
  ncclshim_cu_result r = query(t, node, current);
  if (r != NCCLSHIM_CUDA_ERROR_NOT_READY)
    answer(node, r);
  else
    node->pending_in = t->epoch;
  return r;
}

static int same_stream(const ncs_track_node *a, const ncs_track_node *b) {
  int per_thread = a->stream == NULL || a->stream == NCCLSHIM_CU_STREAM_PER_THREAD;
  return a->stream == b->stream && a->pool == b->pool && (!per_thread || a->thread == b->thread);
}

/* `done` (of stream[0 .. n), in the queue's order) has completed: so has each one before it
 * that the same thread recorded. */
static void complete_before(ncs_track_node **stream, size_t n, const ncs_track_node *done) {
  for (size_t i = 0; i < n && stream[i] != done; i++)
    if (!answered(stream[i]) && stream[i]->thread == done->thread)
      answer(stream[i], NCCLSHIM_CUDA_SUCCESS);
}

/* The nodes of one stream (in the queue's order): the newest asked first, then halves of what
 * lies between the last one known complete and the first one known pending. A failed or
 * captured event ends the search (the walk in ncs_track_look reports it). */
static void search(ncs_tracker *t, ncs_track_node **stream, size_t n, CUcontext *current) {
  size_t lo = 0, hi = n - 1;
  ncclshim_cu_result r = ask(t, stream[hi], current);
  if (r == NCCLSHIM_CUDA_SUCCESS) complete_before(stream, n, stream[hi]);
  if (r != NCCLSHIM_CUDA_ERROR_NOT_READY) return;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    r = ask(t, stream[mid], current);
    if (r == NCCLSHIM_CUDA_SUCCESS) {
      complete_before(stream, n, stream[mid]);
      lo = mid + 1;
    } else if (r == NCCLSHIM_CUDA_ERROR_NOT_READY) {
      hi = mid;
    } else {
      return;
    }
  }
}

/* Room for `n` nodes in the look's scratch; 0 without memory (the look then asks about each
 * node in turn, as it meets it). */
static int room(ncs_tracker *t, size_t n) {
  if (n <= t->capacity) return 1;
  size_t want = n + n / 2 + 64;
  ncs_track_node **seen = realloc(t->seen, want * sizeof(*seen));
  if (seen != NULL) t->seen = seen;
  ncs_track_node **same = seen != NULL ? realloc(t->same, want * sizeof(*same)) : NULL;
  if (same != NULL) t->same = same;
  if (seen == NULL || same == NULL) return 0;
  t->capacity = want;
  return 1;
}

/* Before the walk: the epoch moves on (the nodes in the queue are closed to joins: what a
 * query of their events answers stays true of every operation they cover), the nodes it
 * closes are stamped (so every node the walk judges has its stamp), and the RECORDED ones
 * listed (the lock taken for all three), grouped by stream, each stream searched without the
 * lock. What this finds is only a shortcut: the
 * walk asks about any node left without an answer. */
static void infer(ncs_tracker *t, CUcontext *current) {
  track_lock(t);
  uint64_t listed = t->counts.outstanding;
  track_unlock(t);
  int listing = listed != 0 && room(t, (size_t)listed);
  size_t n = 0;
  track_lock(t);
  t->epoch++;
  int64_t now = ncs_track_now_ns(); /* every node in the queue now was recorded before */
  for (ncs_track_node *node = t->head; node != NULL; node = node->next) {
    if (node->epoch + 1 == t->epoch) node->start_ns = now; /* closed just now */
    if (listing && n < t->capacity &&
        atomic_load_explicit(&node->state, memory_order_acquire) == NODE_RECORDED &&
        !answered(node) && node->thread != NCS_TRACK_NO_THREAD)
      t->seen[n++] = node;
  }
  track_unlock(t);
  if (n == 0) return;
  /* Only this thread changes a RECORDED node, so the list stays true without the lock. At
   * most STREAMS_PER_LOOK streams are searched: grouping costs n per stream. */
  int streams = 0;
  for (size_t first = 0; first < n && streams < STREAMS_PER_LOOK; first++) {
    ncs_track_node *lead = t->seen[first];
    if (lead == NULL) continue; /* already in an earlier stream's search */
    streams++;
    size_t count = 0;
    for (size_t i = first; i < n; i++)
      if (t->seen[i] != NULL && same_stream(t->seen[i], lead)) {
        t->same[count++] = t->seen[i];
        t->seen[i] = NULL;
      }
    search(t, t->same, count, current);
  }
}

int ncs_track_look(ncs_tracker *t, CUcontext *current, ncs_track_seen *seen) {
  seen->pending = seen->failed = 0;
  infer(t, current);
  track_lock(t);
  ncs_track_node *node = t->head;
  while (node != NULL) {
    int state = atomic_load_explicit(&node->state, memory_order_acquire);
    if (state != NODE_FAILED && node->epoch == t->epoch) { /* open to joins: the next look's */
      seen->pending = 1;
      seen->op = node->op;
      seen->start_ns = ncs_track_now_ns(); /* not its stamp: not judged before it is closed */
      break;
    }
    if (state == NODE_RESERVED) { /* a record in progress: the oldest, judged by its stamp */
      seen->pending = 1;
      seen->op = node->op;
      seen->start_ns = node->start_ns;
      break;
    }
    if (state == NODE_RECORDED) {
      /* An answer known needs no query: the lock stays taken (a recording thread waits
       * for it less often). */
      ncclshim_cu_result r;
      if (answered(node)) {
        r = node->answer;
      } else {
        track_unlock(t);
        r = ask(t, node, current);
        track_lock(t);
      }
      if (r == NCCLSHIM_CUDA_ERROR_NOT_READY) {
        seen->pending = 1;
        seen->op = node->op;
        seen->start_ns = node->start_ns;
        break;
      }
      if (capture_answer(r)) {
        t->counts.captured += node->op.n;
      } else if (r != NCCLSHIM_CUDA_SUCCESS) {
        seen->failed = 1;
        seen->op = node->op;
        seen->start_ns = node->start_ns;
        seen->why = (ncs_track_failure){"cuEventQuery", r};
      }
      t->counts.outstanding -= node->op.n; /* known: complete, captured, or failed */
    }
    /* Known, or its record failed (FAILED: the record answered so): into the done chain. */
    ncs_track_node *next = node->next;
    if (node == t->head) ncs_track_release_head(t);
    if (seen->failed) break;
    node = next;
  }
  track_unlock(t);
  return seen->pending || seen->failed;
}

ncs_track_counts ncs_track_counts_of(ncs_tracker *t) {
  track_lock(t);
  ncs_track_counts counts = t->counts;
  track_unlock(t);
  return counts;
}
