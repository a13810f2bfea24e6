/* The tracker's state, shared by its record side (track.c) and its look (track_look.c). For
 * src/track only; track.h says what guards what. */
#ifndef NCCLSHIM_TRACK_INTERNAL_H
#define NCCLSHIM_TRACK_INTERNAL_H

#include <sched.h>

#include "track.h"

enum { NODE_BLOCK = 64, CACHE = 64 };
#define NCS_TRACK_NO_THREAD UINTPTR_MAX
enum { NODE_RESERVED = 1, NODE_RECORDED, NODE_FAILED };

typedef struct ncs_track_pool ncs_track_pool;

/* A node spans whole cache lines, split by who writes them: the first two only the recording
 * thread that holds it (the look reads them), the last only the look. So a record never waits
 * for a line the looking thread has written (on the H200 host such a line cost a record
 * 100-300 ns), and nodes go back to use without the look writing to them: the queue's
 * completed prefix becomes the done chain as it is, linked by the records' own `next`. */
typedef struct ncs_track_node {
  struct ncs_track_node *next; /* in the queue or the done chain, or in a free list */
  atomic_int state;
  uint32_t gen;         /* bumped at each record, so that the look's answers go stale */
  uint64_t epoch;       /* the tracker's epoch when it was taken: others join it until a look */
  CUevent event;        /* NULL: none made yet */
  ncs_track_pool *pool; /* the context `event` was made in (with an event) */
  /* The stream it was recorded on and the recording thread's number, as the look groups
   * them and infers from their order (track_look.c). */
  CUstream stream;
  uintptr_t thread;
  ncs_track_op op;
  /* The look's alone: a final answer (complete, or a failure) known for this record (gen),
   * found by a query or inferred from a later event of the same stream; the start of its
   * clock, stamped by the look that closed it to joins; and the look (epoch) whose query
   * found it pending, which asks no more. */
  _Alignas(64) uint32_t answered_gen;
  ncclshim_cu_result answer;
  int64_t start_ns;
  uint64_t pending_in;
} ncs_track_node;

/* The events of one context: its nodes that hold a spare event. Never freed before the
 * tracker. */
struct ncs_track_pool {
  ncs_track_pool *next;
  CUcontext ctx;
  ncs_track_node *spare;
};

typedef struct ncs_track_block {
  ncs_track_node nodes[NODE_BLOCK];
  struct ncs_track_block *next;
} ncs_track_block;

struct ncs_tracker {
  const ncs_track_driver *d;
  atomic_int lock;
  ncs_track_node *head, *tail; /* the queue, oldest first */
  /* The done chain: nodes the look found complete (or failed), oldest first, from done_head
   * to done_last along `next` (done_last->next is the queue's head), taken again by records
   * in that order. */
  ncs_track_node *done_head, *done_last;
  ncs_track_node *blank; /* free nodes without an event */
  ncs_track_pool *pools;
  ncs_track_block *blocks;
  /* Per stream seen lately: its context's pool, and its last node (which the next record of
   * the same thread may join; the node may have been reused since: a record checks). */
  struct {
    CUstream stream;
    ncs_track_pool *pool;
    ncs_track_node *last;
  } cache[CACHE];
  /* Bumped by each look as it lists the queue: a node taken before is closed to joins. */
  uint64_t epoch;
  ncs_track_counts counts;
  /* The look's scratch (only the looking thread uses it): the RECORDED nodes of one look,
   * and one stream's among them. */
  ncs_track_node **seen, **same;
  size_t capacity;
};

/* The spin lock: a record takes it once on its way in (an atomic exchange and a store),
 * where a mutex costs two atomic operations and two calls. A waiter yields the processor,
 * in case the holder was descheduled. */
static inline void track_lock(ncs_tracker *t) {
  while (atomic_exchange_explicit(&t->lock, 1, memory_order_acquire) != 0)
    while (atomic_load_explicit(&t->lock, memory_order_relaxed) != 0) sched_yield();
}
static inline void track_unlock(ncs_tracker *t) {
  atomic_store_explicit(&t->lock, 0, memory_order_release);
}

/* Under the lock: the queue's head, known complete or failed, joins the done chain (the look
 * writes nothing to it). */
void ncs_track_release_head(ncs_tracker *t);

#endif
