/* The hang dump (NCCLSHIM_RECORD_HANG_MS=N), its enqueueing side: each recorded operation
 * that is not captured into a graph gets an event of its own on its stream, recorded by the
 * tracker (src/track) on the program's thread, inside the NCCL call, once the operation is
 * enqueued (for a group, at ncclGroupEnd, when NCCL launches it: one event per stream of the
 * group, covering the group's operations there). Nothing is recorded later and no other
 * thread names the stream: a program may destroy it as soon as its work is done. The
 * checking thread (record_hang_thread.c) dumps once, reason "hang", when the oldest event has
 * not completed N ms after it was recorded. An operation that cannot be watched (no driver
 * loaded, a driver call that failed, no memory) is said on stderr, never dropped without a
 * word. Off (no N), nothing here runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dropin.h"
#include "record.h"
#include "record_hang.h"
#include "record_hang_thread.h"
#include "record_state.h"
#include "say.h"

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

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

static void watch(const void *stream, int fn, uint64_t index, uint64_t seq, uint64_t n) {
  const ncs_track_driver *d = ncs_rec_driver();
  if (d == NULL) {
    say_not_watched(fn, seq, "", -1);
    return;
  }
  ncs_tracker *t = ncs_hang_tracker(d);
  if (t == NULL) return; /* fired, exiting, or no thread (said) */
  ncs_track_op op = {.type = fn, .seq = seq, .index = index, .n = n};
  ncs_track_failure why;
  if (ncs_track_record(t, (CUstream)stream, &op, now_ns(), &why) != 0)
    say_not_watched(fn, seq, why.call, why.result != 0 ? (int)why.result : 12 /* ENOMEM */);
}

/* ---- Groups: NCCL launches a group's operations at ncclGroupEnd, so each stream's event
 * is recorded then, covering the group's operations on it (named by the first). ---- */
typedef struct group_op {
  const void *stream;
  int fn;
  uint64_t index, seq, n;
} group_op;

enum { GROUP_INLINE = 8 };

static __thread struct {
  int depth;
  size_t used, size; /* size 0: ops is `inline_ops` (GROUP_INLINE of them) */
  group_op *ops;     /* grown on the heap past GROUP_INLINE, freed at the group's end */
  group_op inline_ops[GROUP_INLINE];
} group NCCLSHIM_THREAD_MODEL;

void ncs_rec_hang_op(const void *stream, int fn, uint64_t index, uint64_t seq) {
  if (group.depth == 0) {
    watch(stream, fn, index, seq, 1);
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
  group.ops[group.used++] = (group_op){stream, fn, index, seq, 1};
}

void ncs_rec_hang_group(int fn, int succeeded) {
  if (fn == NCCLSHIM_FN_ncclGroupStart) {
    group.depth += succeeded;
    return;
  }
  if (group.depth == 0 || --group.depth > 0) return;
  for (size_t i = 0; succeeded && i < group.used; i++)
    watch(group.ops[i].stream, group.ops[i].fn, group.ops[i].index, group.ops[i].seq,
          group.ops[i].n);
  group.used = 0;
  if (group.size != 0) free(group.ops);
  group.size = 0;
}

/* From the recorder's pthread_atfork child handler: no getpid() per call (a system call)
 * to find out. */
void ncs_rec_hang_forked(void) { ncs_hang_thread_forked(); }
