/* The tracker's look, on the one thread that looks (the watchdog's, the hang dump's): it
 * queries the events of the queue, oldest first, without the lock; the completed ones leave
 * the queue and their events are reused. */
#include "track_internal.h"

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

int ncs_track_look(ncs_tracker *t, CUcontext *current, ncs_track_seen *seen) {
  seen->pending = seen->failed = 0;
  track_lock(t);
  ncs_track_node *node = t->head;
  while (node != NULL) {
    int state = atomic_load_explicit(&node->state, memory_order_acquire);
    if (state == NODE_RESERVED) { /* a record in progress: the oldest, judged by its start */
      seen->pending = 1;
      seen->op = node->op;
      seen->start_ns = node->start_ns;
      break;
    }
    if (state == NODE_RECORDED) {
      track_unlock(t);
      ncclshim_cu_result r = query(t, node, current);
      track_lock(t);
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
      state = NODE_DONE;
      atomic_store_explicit(&node->state, state, memory_order_relaxed);
    }
    /* A node whose record failed (FAILED: the record answered so) leaves as a DONE one. */
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
