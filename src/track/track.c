/* The tracker's record side: its nodes and per-context pools of events, and the record made
 * on the program's thread (track.h says the contract). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "track_internal.h"

/* A number of the calling thread's own (1, 2, ...: never one that another thread had): its
 * records are in program order, and it tells the handles that name the calling thread's
 * stream apart; NCS_TRACK_NO_THREAD when none could be had (the look then infers nothing from
 * or for that node). Behind a pthread key rather than
 * _Thread_local, as the per-thread message of src/status.c is. */
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int thread_key_ok;
static atomic_uintptr_t last_thread;

static void make_thread_key(void) { thread_key_ok = pthread_key_create(&thread_key, NULL) == 0; }

/* Unloaded (dlclose): the key goes back (a process has 1024 of them). */
__attribute__((destructor)) static void delete_thread_key(void) {
  if (!thread_key_ok) return;
  thread_key_ok = 0;
  pthread_key_delete(thread_key);
}

static uintptr_t track_thread(void) {
  pthread_once(&thread_once, make_thread_key);
  if (!thread_key_ok) return NCS_TRACK_NO_THREAD;
  uintptr_t id = (uintptr_t)pthread_getspecific(thread_key);
  if (id == 0) {
    id = atomic_fetch_add(&last_thread, 1) + 1;
    if (pthread_setspecific(thread_key, (void *)id) != 0) return NCS_TRACK_NO_THREAD;
  }
  return id;
}

void ncs_track_driver_of_table(const ncclshim_cuda_table *table, ncs_track_driver *d) {
#define NCS_TRACK_FROM_TABLE_(name) d->name = table->name;
  NCS_TRACK_DRIVER_FUNCTIONS(NCS_TRACK_FROM_TABLE_)
  NCS_TRACK_DRIVER_OPTIONAL(NCS_TRACK_FROM_TABLE_)
#undef NCS_TRACK_FROM_TABLE_
}

ncs_tracker *ncs_track_create(const ncs_track_driver *driver) {
  ncs_tracker *t = calloc(1, sizeof(*t));
  if (t != NULL) t->d = driver;
  return t;
}

void ncs_track_destroy(ncs_tracker *t) {
  if (t == NULL) return;
  for (ncs_track_block *b = t->blocks; b != NULL; b = t->blocks) {
    for (int i = 0; i < NODE_BLOCK; i++)
      if (b->nodes[i].event != NULL) t->d->cuEventDestroy(b->nodes[i].event);
    t->blocks = b->next;
    free(b);
  }
  while (t->pools != NULL) {
    ncs_track_pool *p = t->pools;
    t->pools = p->next;
    free(p);
  }
  free(t->seen);
  free(t->same);
  free(t);
}

int ncs_track_capturing(const ncs_track_driver *d, CUstream stream, ncclshim_cu_result *r) {
  if (d->cuStreamIsCapturing == NULL) return 0; /* a driver older than captures */
  ncclshim_cu_stream_capture_status capture = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  *r = d->cuStreamIsCapturing(stream, &capture);
  if (*r == NCCLSHIM_CUDA_SUCCESS) return capture != NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  if (*r == NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return 1;
  if (*r == NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED) return 0; /* a driver without captures */
  return -1;
}

int64_t ncs_track_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static size_t cache_row(CUstream stream) {
  uintptr_t h = (uintptr_t)stream; /* the default streams 0, 1, 2 get rows of their own */
  return (size_t)(h ^ (h >> 4) ^ (h >> 12)) % CACHE;
}

/* Under the lock: the pool of `ctx`, or NULL. */
static ncs_track_pool *pool_of(ncs_tracker *t, CUcontext ctx) {
  for (ncs_track_pool *p = t->pools; p != NULL; p = p->next)
    if (p->ctx == ctx) return p;
  return NULL;
}

/* The pool of `ctx`, made when missing; the lock not held. NULL without memory. */
static ncs_track_pool *pool_for(ncs_tracker *t, CUcontext ctx) {
  track_lock(t);
  ncs_track_pool *p = pool_of(t, ctx);
  track_unlock(t);
  if (p != NULL) return p;
  ncs_track_pool *made = calloc(1, sizeof(*made));
  if (made == NULL) return NULL;
  made->ctx = ctx;
  track_lock(t);
  p = pool_of(t, ctx); /* another thread's, made meanwhile */
  if (p == NULL) {
    made->next = t->pools;
    t->pools = p = made;
    made = NULL;
  }
  track_unlock(t);
  free(made);
  return p;
}

/* The context of `stream`: the calling thread's current one for the legacy and per-thread
 * default streams (and on a driver without cuStreamGetCtx, before 9.2). */
static ncclshim_cu_result context_of(const ncs_track_driver *d, CUstream stream, CUcontext *ctx) {
  *ctx = NULL;
  if (stream == NULL || stream == NCCLSHIM_CU_STREAM_LEGACY ||
      stream == NCCLSHIM_CU_STREAM_PER_THREAD || d->cuStreamGetCtx == NULL)
    return d->cuCtxGetCurrent(ctx);
  ncclshim_cu_result r = d->cuStreamGetCtx(stream, ctx);
  return r == NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED ? d->cuCtxGetCurrent(ctx) : r;
}

/* A new event made in `ctx`, made current for the call when it is not. */
static ncclshim_cu_result make_event(const ncs_track_driver *d, CUcontext ctx, CUevent *event,
                                     ncs_track_failure *why) {
  CUcontext current = NULL;
  ncclshim_cu_result r = d->cuCtxGetCurrent(&current);
  why->call = "cuCtxGetCurrent";
  if (r == NCCLSHIM_CUDA_SUCCESS && current != ctx) {
    r = d->cuCtxSetCurrent(ctx);
    why->call = "cuCtxSetCurrent";
  }
  if (r == NCCLSHIM_CUDA_SUCCESS) {
    r = d->cuEventCreate(event, NCCLSHIM_CU_EVENT_DISABLE_TIMING);
    why->call = "cuEventCreate";
    if (current != ctx) {
      ncclshim_cu_result back = d->cuCtxSetCurrent(current);
      if (r == NCCLSHIM_CUDA_SUCCESS && back != NCCLSHIM_CUDA_SUCCESS) {
        d->cuEventDestroy(*event);
        r = back;
        why->call = "cuCtxSetCurrent";
      }
    }
  }
  if (r != NCCLSHIM_CUDA_SUCCESS) *event = NULL;
  why->result = r;
  return r;
}

enum { DONE_TRIES = 8 };

/* Under the lock: a free node, holding an event of `pool` when one is spare: from the pool's
 * spares, else the done chain (a node of another context met there goes to its own pool's
 * spares, DONE_TRIES at most), else a blank one. NULL when every node is in use. */
static ncs_track_node *take_node(ncs_tracker *t, ncs_track_pool *pool) {
  ncs_track_node *node = pool->spare;
  if (node != NULL) {
    pool->spare = node->next;
    return node;
  }
  for (int tries = 0; tries < DONE_TRIES && (node = t->done_head) != NULL; tries++) {
    if (node == t->done_last)
      t->done_head = t->done_last = NULL;
    else
      t->done_head = node->next;
    if (node->event == NULL || node->pool == pool) return node;
    node->next = node->pool->spare;
    node->pool->spare = node;
  }
  if ((node = t->blank) != NULL) t->blank = node->next;
  return node;
}

/* More blank nodes; the lock not held. 0 without memory. */
static int grow(ncs_tracker *t) {
  ncs_track_block *b = aligned_alloc(64, sizeof(*b)); /* nodes on whole cache lines */
  if (b == NULL) return 0;
  memset(b, 0, sizeof(*b));
  for (int i = 0; i < NODE_BLOCK - 1; i++) b->nodes[i].next = &b->nodes[i + 1];
  track_lock(t);
  b->next = t->blocks;
  t->blocks = b;
  b->nodes[NODE_BLOCK - 1].next = t->blank;
  t->blank = &b->nodes[0];
  track_unlock(t);
  return 1;
}

/* Give the node an event of `pool`'s context instead of the one it holds (another
 * context's): a spare one, else a new one; its old event goes to its own pool's spares
 * (through a blank node) or is destroyed. */
static ncclshim_cu_result switch_event(ncs_tracker *t, ncs_track_node *node, ncs_track_pool *pool,
                                       ncs_track_failure *why) {
  CUevent old = node->event;
  ncs_track_pool *old_pool = node->pool;
  track_lock(t);
  ncs_track_node *other = pool->spare != NULL ? take_node(t, pool) : t->blank;
  if (other == t->blank && other != NULL) t->blank = other->next;
  if (other != NULL) {
    node->event = other->event;
    other->event = old;
    other->pool = old_pool;
    other->next = old_pool->spare;
    old_pool->spare = other;
    old = NULL;
  } else {
    node->event = NULL;
  }
  node->pool = pool;
  track_unlock(t);
  if (old != NULL) t->d->cuEventDestroy(old);
  if (node->event != NULL) return NCCLSHIM_CUDA_SUCCESS;
  return make_event(t->d, pool->ctx, &node->event, why);
}

/* Under the lock: the done chain's nodes holding an event of `pool`, unlinked from it and
 * pushed on `*to`. */
static void unchain_pool(ncs_tracker *t, ncs_track_pool *pool, ncs_track_node **to) {
  ncs_track_node *prev = NULL, *n = t->done_head;
  while (n != NULL) {
    int last = n == t->done_last;
    ncs_track_node *next = n->next;
    if (n->pool == pool && n->event != NULL) {
      if (prev == NULL)
        t->done_head = last ? NULL : next;
      else
        prev->next = next; /* the last one's next stays the queue's head */
      if (last) t->done_last = prev;
      n->next = *to;
      *to = n;
    } else {
      prev = n;
    }
    n = last ? NULL : next;
  }
}

/* Destroy every spare event of `pool`, in its spares and the done chain (the lock not held):
 * the driver answered that their context is destroyed (a context handle reused by a new
 * context, whose streams refuse the old one's events). Their nodes become blank. */
static void renew_pool(ncs_tracker *t, ncs_track_pool *pool) {
  track_lock(t);
  ncs_track_node *spare = pool->spare, *last = NULL;
  pool->spare = NULL;
  unchain_pool(t, pool, &spare);
  track_unlock(t);
  for (ncs_track_node *n = spare; n != NULL; n = n->next) { /* ours alone now */
    t->d->cuEventDestroy(n->event);
    n->event = NULL;
    last = n;
  }
  if (last == NULL) return;
  track_lock(t);
  last->next = t->blank;
  t->blank = spare;
  track_unlock(t);
}

/* The pool of `stream`'s context, asked of the driver; NULL with *why set. */
static ncs_track_pool *resolve(ncs_tracker *t, CUstream stream, ncs_track_failure *why) {
  CUcontext ctx = NULL;
  why->result = context_of(t->d, stream, &ctx);
  why->call = stream == NULL || stream == NCCLSHIM_CU_STREAM_LEGACY ||
                      stream == NCCLSHIM_CU_STREAM_PER_THREAD || t->d->cuStreamGetCtx == NULL
                  ? "cuCtxGetCurrent"
                  : "cuStreamGetCtx";
  if (why->result != NCCLSHIM_CUDA_SUCCESS) return NULL;
  ncs_track_pool *pool = pool_for(t, ctx);
  if (pool == NULL) *why = (ncs_track_failure){"malloc", 0};
  return pool;
}

/* Record the node's event on `stream`, making it (in `pool`'s context) when the node holds
 * none. `resolved`: the pool was just asked of the driver, not taken from the cache. */
static ncclshim_cu_result record_node(ncs_tracker *t, ncs_track_node *node, CUstream stream,
                                      ncs_track_pool *pool, int resolved, ncs_track_failure *why) {
  if (node->event == NULL) {
    node->pool = pool;
    if (make_event(t->d, pool->ctx, &node->event, why) != NCCLSHIM_CUDA_SUCCESS) return why->result;
  }
  ncclshim_cu_result r = t->d->cuEventRecord(node->event, stream);
  if (r == NCCLSHIM_CUDA_ERROR_INVALID_HANDLE && !resolved) {
    /* The cached context is not the stream's (a stream handle reused in another context,
     * or a default stream of another thread's context): ask, and record again. */
    ncs_track_pool *right = resolve(t, stream, why);
    if (right == NULL) return why->result;
    if (right != pool) {
      if (switch_event(t, node, right, why) != NCCLSHIM_CUDA_SUCCESS) return why->result;
      r = t->d->cuEventRecord(node->event, stream);
    }
    resolved = 1;
  }
  if (r == NCCLSHIM_CUDA_ERROR_CONTEXT_IS_DESTROYED) { /* the pool's events are all stale */
    renew_pool(t, node->pool);
    t->d->cuEventDestroy(node->event);
    if (make_event(t->d, node->pool->ctx, &node->event, why) != NCCLSHIM_CUDA_SUCCESS)
      return why->result;
    r = t->d->cuEventRecord(node->event, stream);
  }
  if (r != NCCLSHIM_CUDA_SUCCESS) { /* an event the driver refused is not reused */
    t->d->cuEventDestroy(node->event);
    node->event = NULL;
  }
  *why = (ncs_track_failure){"cuEventRecord", r};
  if (r == NCCLSHIM_CUDA_SUCCESS && resolved) { /* remember the stream's context */
    track_lock(t);
    t->cache[cache_row(stream)].stream = stream;
    t->cache[cache_row(stream)].pool = node->pool;
    t->cache[cache_row(stream)].last = node;
    track_unlock(t);
  }
  return r;
}

/* The op, its label only when it has one (a replay's): the rest of it is a few words. */
static void copy_op(ncs_track_op *to, const ncs_track_op *op) {
  memcpy(to, op, offsetof(ncs_track_op, label));
  if (op->label[0] != '\0')
    memcpy(to->label, op->label, sizeof(op->label));
  else
    to->label[0] = '\0';
}

/* Under the lock: the node that `op` may join, or NULL. It is the stream's last node, taken by
 * this thread in this epoch (no look has listed it: none has queried its event), done
 * recording, of the same owner, and neither is a replay (whose label names it alone). */
static ncs_track_node *joinable(ncs_tracker *t, size_t row, CUstream stream, uintptr_t thread,
                                const ncs_track_op *op) {
  ncs_track_node *last = t->cache[row].last; /* another stream's too: checked below */
  if (last == NULL || last->epoch != t->epoch || last->stream != stream || last->thread != thread ||
      thread == NCS_TRACK_NO_THREAD || last->op.owner != op->owner || last->op.label[0] != '\0' ||
      op->label[0] != '\0' ||
      atomic_load_explicit(&last->state, memory_order_relaxed) != NODE_RECORDED)
    return NULL;
  return last;
}

/* Join `node` (the lock held, released here): its event is recorded again on `stream`, after
 * this operation, so that it covers the operations before too (they are on the same stream,
 * recorded by the same thread: in order). 1 when it does; 0 when the driver refused the record
 * (the node is as it was, and closed to joins: the caller takes a node of its own, which
 * handles a changed context). */
static int join(ncs_tracker *t, ncs_track_node *node, size_t row, CUstream stream,
                const ncs_track_op *op) {
  atomic_store_explicit(&node->state, NODE_RESERVED, memory_order_relaxed);
  node->op.n += op->n;
  t->counts.outstanding += op->n;
  track_unlock(t);
  ncclshim_cu_result r = t->d->cuEventRecord(node->event, stream);
  if (r != NCCLSHIM_CUDA_SUCCESS) { /* the event's last record stands (a refused one is void) */
    track_lock(t);
    node->op.n -= op->n;
    t->counts.outstanding -= op->n;
    if (t->cache[row].last == node) t->cache[row].last = NULL;
    track_unlock(t);
  }
  atomic_store_explicit(&node->state, NODE_RECORDED, memory_order_release);
  return r == NCCLSHIM_CUDA_SUCCESS;
}

int ncs_track_record(ncs_tracker *t, CUstream stream, const ncs_track_op *op,
                     ncs_track_failure *why) {
  uintptr_t thread = track_thread(); /* its first call per thread may allocate: not locked */
  track_lock(t);
  size_t row = cache_row(stream);
  ncs_track_node *last = joinable(t, row, stream, thread, op);
  if (last != NULL) {
    if (join(t, last, row, stream, op)) return 0;
    track_lock(t);
  }
  ncs_track_pool *pool = t->cache[row].stream == stream ? t->cache[row].pool : NULL;
  int resolved = pool == NULL;
  if (resolved) { /* a stream not seen (lately): its context, from the driver */
    track_unlock(t);
    if ((pool = resolve(t, stream, why)) == NULL) return -1;
    track_lock(t);
  }
  ncs_track_node *node;
  while ((node = take_node(t, pool)) == NULL) {
    track_unlock(t);
    if (!grow(t)) {
      *why = (ncs_track_failure){"malloc", 0};
      return -1;
    }
    track_lock(t);
  }
  node->next = NULL;
  node->gen++; /* the look's answers about its last record go stale */
  node->epoch = t->epoch;
  copy_op(&node->op, op);
  node->stream = stream;
  node->thread = thread;
  atomic_store_explicit(&node->state, NODE_RESERVED, memory_order_relaxed);
  if (t->tail != NULL) {
    t->tail->next = node;
  } else {
    t->head = node;
    if (t->done_last != NULL) t->done_last->next = node; /* the chain still leads to the head */
  }
  t->tail = node;
  t->counts.outstanding += op->n;
  if (t->cache[row].stream == stream) t->cache[row].last = node;
  track_unlock(t);
  ncclshim_cu_result r = record_node(t, node, stream, pool, resolved, why);
  if (r != NCCLSHIM_CUDA_SUCCESS) { /* not watched: not outstanding */
    track_lock(t);
    t->counts.outstanding -= op->n;
    track_unlock(t);
  }
  atomic_store_explicit(&node->state, r == NCCLSHIM_CUDA_SUCCESS ? NODE_RECORDED : NODE_FAILED,
                        memory_order_release);
  return r == NCCLSHIM_CUDA_SUCCESS ? 0 : -1;
}

void ncs_track_release_head(ncs_tracker *t) {
  ncs_track_node *node = t->head;
  t->head = node->next;
  if (t->head == NULL) t->tail = NULL;
  if (t->done_head == NULL) t->done_head = node;
  t->done_last = node; /* its next is the queue's new head */
}
