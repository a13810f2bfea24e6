/* The hang dump (NCCLSHIM_RECORD_HANG_MS=N), its enqueueing side: each recorded operation
 * that is not captured into a graph gets an event on its stream, recorded by the tracker
 * (src/track) on the program's thread, inside the NCCL call, once the operation is enqueued
 * (for a group, at ncclGroupEnd, when NCCL launches it: one record per stream of the group,
 * covering the group's operations there). One communicator's operations that one thread
 * records on one stream between two looks share an event, recorded again by each (track.h,
 * the sharing rule): the tracker's owner of an operation is its communicator. A non-blocking
 * communicator's call that answers ncclInProgress has not enqueued its work yet (NCCL
 * launches it from a thread of its own): its event waits for the program's
 * ncclCommGetAsyncError that says the communicator is done, and is recorded inside that call
 * (deferred, below). An ncclGroupSimulateEnd given a simInfo launches nothing: its group's
 * operations get no event. Nothing is recorded later than that and no other thread names the
 * stream: a program may destroy it as soon as its work is done. The
 * checking thread (record_hang_thread.c) dumps once, reason "hang", when the oldest event has
 * not completed N ms after a look first saw it. An operation that cannot be watched (no driver
 * loaded, a driver call that failed, no memory) is said on stderr, never dropped without a
 * word. Off (no N), nothing here runs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dropin.h"
#include "record.h"
#include "record_hang.h"
#include "record_hang_thread.h"
#include "record_state.h"
#include "say.h"

/* Said once per process and reason: the first operation that could not be watched. */
static void say_not_watched(int fn, uint64_t seq, const char *why, int result) {
  static atomic_int said_no_driver, said_failure;
  atomic_int *said = result < 0 ? &said_no_driver : &said_failure;
  if (atomic_exchange(said, 1)) return;
  char what[240];
  if (result < 0)
    snprintf(what, sizeof(what),
             "NCCLSHIM_RECORD_HANG_MS=%d is set, but no CUDA driver is loaded in this process "
             "(or it is older than CUDA 10.0) at %s #%llu",
             ncs_rec->hang_ms, ncclshim_nccl_function_name(fn), (unsigned long long)seq);
  else
    snprintf(what, sizeof(what), "%s #%llu is not watched: %s failed (%d)",
             ncclshim_nccl_function_name(fn), (unsigned long long)seq, why, result);
  ncs_rec_say("no hang dump: ", what,
              result < 0 ? ": no operation is watched" : " (later such operations are not said)",
              0);
}

static void watch(const void *comm, const void *stream, int fn, uint64_t index, uint64_t seq,
                  uint64_t n) {
  const ncs_track_driver *d = ncs_rec_driver();
  if (d == NULL) {
    say_not_watched(fn, seq, "", -1);
    return;
  }
  ncs_tracker *t = ncs_hang_tracker(d);
  if (t == NULL) return; /* fired, exiting, or no thread (said) */
  ncs_track_op op;
  ncs_track_op_set(&op, NULL, 0, fn, seq, index, n, comm);
  ncs_track_failure why;
  if (ncs_track_record(t, (CUstream)stream, &op, &why) != 0)
    say_not_watched(fn, seq, why.call, why.result != 0 ? (int)why.result : 12 /* ENOMEM */);
}

/* An operation waiting for its event: in a group until its end, or NCCL's launch. */
typedef struct group_op {
  const void *comm, *stream;
  int fn;
  uint64_t index, seq, n;
} group_op;

/* ---- Deferred: operations a non-blocking communicator accepted (ncclInProgress) and NCCL
 * launches later, in order. Each waits for an ncclCommGetAsyncError of its communicator that
 * answers ncclSuccess, and is recorded inside that call, under the lock: a thread that polls
 * the same communicator meanwhile returns only once they are recorded, so the program can
 * learn that the work is launched (and then destroy the stream) only after the records. An
 * asynchronous error, ncclCommDestroy or ncclCommAbort drops them: NCCL never launches them,
 * or the communicator (and maybe its streams) is gone. ---- */
typedef struct deferred_op {
  struct deferred_op *next;
  group_op op;
} deferred_op;

enum { DEFERRED_MAX = 1 << 16 }; /* a program that never polls holds no more than this */

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static deferred_op *deferred_head, **deferred_tail = &deferred_head;
static size_t deferred_count;

static void defer(const group_op *op) {
  static atomic_int said_full;
  deferred_op *d = NULL;
  pthread_mutex_lock(&deferred_lock);
  int full = deferred_count == DEFERRED_MAX;
  if (!full && (d = malloc(sizeof(*d))) != NULL) {
    *d = (deferred_op){NULL, *op};
    *deferred_tail = d;
    deferred_tail = &d->next;
    deferred_count++;
  }
  pthread_mutex_unlock(&deferred_lock);
  if (d != NULL) return;
  if (!full) {
    say_not_watched(op->fn, op->seq, "malloc", 12 /* ENOMEM */);
  } else if (!atomic_exchange(&said_full, 1)) {
    char what[160];
    snprintf(what, sizeof(what),
             "%s #%llu is not watched: %d operations of non-blocking communicators wait for an "
             "ncclCommGetAsyncError that says they are launched",
             ncclshim_nccl_function_name(op->fn), (unsigned long long)op->seq, DEFERRED_MAX);
    ncs_rec_say("no hang dump: ", what, " (later such operations are not said)", 0);
  }
}

/* `comm`'s deferred operations: watched (launched) or dropped. */
static void settle(const void *comm, int launched) {
  pthread_mutex_lock(&deferred_lock);
  for (deferred_op **at = &deferred_head; *at != NULL;) {
    deferred_op *d = *at;
    if (d->op.comm != comm) {
      at = &d->next;
      continue;
    }
    *at = d->next;
    if (deferred_tail == &d->next) deferred_tail = at;
    deferred_count--;
    if (launched) watch(d->op.comm, d->op.stream, d->op.fn, d->op.index, d->op.seq, d->op.n);
    free(d);
  }
  pthread_mutex_unlock(&deferred_lock);
}

/* Watched now, or once NCCL has launched it (`in_progress`: the call answered so). */
static void watch_or_defer(const group_op *op, int in_progress) {
  if (in_progress)
    defer(op);
  else
    watch(op->comm, op->stream, op->fn, op->index, op->seq, op->n);
}

/* ---- Groups: NCCL launches a group's operations at ncclGroupEnd, so each stream's event
 * is recorded then, covering the group's operations on it (named by the first). ---- */

enum { GROUP_INLINE = 8 };

static __thread struct {
  int depth;
  size_t used, size; /* size 0: ops is `inline_ops` (GROUP_INLINE of them) */
  group_op *ops;     /* grown on the heap past GROUP_INLINE, freed at the group's end */
  group_op inline_ops[GROUP_INLINE];
} group NCCLSHIM_THREAD_MODEL;

static void add_op(const void *comm, const void *stream, int fn, uint64_t index, uint64_t seq,
                   int in_progress) {
  if (group.depth == 0) {
    watch_or_defer(&(group_op){comm, stream, fn, index, seq, 1}, in_progress);
    return;
  }
  for (size_t i = 0; i < group.used; i++) {
    if (group.ops[i].stream == stream) {
      group.ops[i].n++;
      return;
    }
  }
  if (group.size == 0) group.ops = group.inline_ops;
  size_t capacity = group.size == 0 ? GROUP_INLINE : group.size;
  if (group.used == capacity) {
    group_op *grown = group.size == 0 ? malloc(2 * capacity * sizeof(*grown))
                                      : realloc(group.ops, 2 * capacity * sizeof(*grown));
    if (grown == NULL) {
      say_not_watched(fn, seq, "malloc", 12 /* ENOMEM */);
      return;
    }
    if (group.size == 0) memcpy(grown, group.inline_ops, sizeof(group.inline_ops));
    group.ops = grown;
    group.size = 2 * capacity;
  }
  group.ops[group.used++] = (group_op){comm, stream, fn, index, seq, 1};
}

/* ncclGroupStart, or a group's end: `launched` 0 drops the group's operations (a failed
 * end, or a simulated one). */
static void group_edge(int fn, int launched, int in_progress) {
  if (fn == NCCLSHIM_FN_ncclGroupStart) {
    group.depth += launched;
    return;
  }
  if (group.depth == 0 || --group.depth > 0) return;
  for (size_t i = 0; launched && i < group.used; i++) watch_or_defer(&group.ops[i], in_progress);
  group.used = 0;
  if (group.size != 0) free(group.ops);
  group.size = 0;
}

void ncs_rec_hang_call(const ncs_rec_call *call, int result) {
  int accepted = result == ncclSuccess || result == ncclInProgress;
  int in_progress = result == ncclInProgress;
  switch (call->fn) {
  case NCCLSHIM_FN_ncclGroupStart:
  case NCCLSHIM_FN_ncclGroupEnd:
  case NCCLSHIM_FN_ncclGroupSimulateEnd:
    group_edge(call->fn, accepted && !call->simulated, in_progress);
    return;
  case NCCLSHIM_FN_ncclCommGetAsyncError:
    if (result == ncclSuccess && call->async_out != NULL && *call->async_out != ncclInProgress)
      settle(call->comm, *call->async_out == ncclSuccess);
    return;
  case NCCLSHIM_FN_ncclCommDestroy:
  case NCCLSHIM_FN_ncclCommAbort:
    settle(call->comm, 0);
    return;
  default:
    if (call->is_op && accepted && !call->captured && call->index != 0)
      add_op(call->comm, call->stream, call->fn, call->index, call->seq, in_progress);
  }
}

/* From the recorder's pthread_atfork child handler: no getpid() per call (a system call)
 * to find out. The parent's deferred operations are not the child's. */
void ncs_rec_hang_forked(void) {
  pthread_mutex_init(&deferred_lock, NULL);
  while (deferred_head != NULL) {
    deferred_op *d = deferred_head;
    deferred_head = d->next;
    free(d);
  }
  deferred_tail = &deferred_head;
  deferred_count = 0;
  ncs_hang_thread_forked();
}
