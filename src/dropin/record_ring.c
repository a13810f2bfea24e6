/* Recording one call: the per-thread nesting guard, the communicators' identities and
 * sequence numbers, the lock-free ring, and when a call's outcome asks for a dump. */
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"
#include "record.h"
#include "record_cuda.h"
#include "record_hang.h"
#include "record_state.h"

static uint64_t mix(uint64_t h, const void *bytes, size_t size) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

/* A communicator just made by `call`: its identity is the unique id's hash, or for a split
 * its parent's id, the number of split calls made on the parent before it (every rank of the
 * parent makes each one, NCCL_SPLIT_NOCOLOR included) and the color. */
static void add_comm(const ncs_rec_call *call, const void *made, uint64_t nth, uint64_t parent_id) {
  ncs_rec_comm *c = ncs_rec_add(made);
  if (c == NULL) return;
  uint64_t id = 0xcbf29ce484222325ull;
  if (call->uid != NULL) {
    id = mix(id, call->uid, sizeof(ncclUniqueId));
  } else if (parent_id != 0) {
    id = mix(mix(mix(id, &parent_id, sizeof(parent_id)), &nth, sizeof(nth)), &call->color,
             sizeof(call->color));
  } else {
    id = 0; /* split from a communicator the recorder never saw made */
  }
  atomic_store(&c->ops, 0); /* made again at an address seen before: it starts afresh */
  atomic_store(&c->colls, 0);
  atomic_store(&c->splits, 0);
  atomic_store(&c->async_error, 0);
  atomic_store(&c->dumped, 0);
  /* A split's rank and size: asked of NCCL by its wrapper (record_calls.c). */
  atomic_store(&c->rank, call->rank);
  atomic_store(&c->nranks, call->nranks);
  atomic_store(&c->created_by, call->fn);
  atomic_store(&c->id, id != 0 ? id | 1 : 1); /* 1: made, identity unknown */
  int none = NCCLSHIM_REC_NONE;
  if (call->uid != NULL && call->rank != NCCLSHIM_REC_NONE)
    atomic_compare_exchange_strong(&ncs_rec->process_rank, &none, call->rank);
}

/* A communicator the recorder meets in a call without having seen it made. */
static ncs_rec_comm *comm_of(const void *comm) {
  if (comm == NULL) return NULL;
  /* The record is still this communicator's while its key is: an ended record's key is 0
   * until it is reused, and records are never freed. */
  ncs_rec_comm *c = ncs_rec_here.record;
  unsigned generation = atomic_load_explicit(&ncs_rec->generation, memory_order_relaxed);
  if (ncs_rec_here.comm == (uintptr_t)comm && c != NULL &&
      atomic_load_explicit(&c->key, memory_order_relaxed) == (uintptr_t)comm &&
      atomic_load_explicit(&c->generation, memory_order_relaxed) == generation)
    return c;
  c = ncs_rec_find(comm);
  if (c == NULL && (c = ncs_rec_add(comm)) != NULL) {
    uint64_t unknown = 0;
    atomic_compare_exchange_strong(&c->id, &unknown, 1);
  }
  /* A forked child that goes on with its parent's communicator: listed in its dumps too, so
   * that the comparison sees two processes claim one rank. */
  if (c != NULL) atomic_store_explicit(&c->generation, generation, memory_order_relaxed);
  ncs_rec_here.comm = (uintptr_t)comm;
  ncs_rec_here.record = c;
  return c;
}

/* ---- The ring ---- */

enum { PREFETCH_AHEAD = 4 };

static rec_entry *slot_of(uint64_t index) { return &ncs_rec->entries[index & ncs_rec->mask]; }

static void publish(ncs_rec_call *call, int result) {
  rec_state *r = ncs_rec;
  ncs_rec_comm *c = comm_of(call->comm);
  /* A load and a store, not a locked add: NCCL requires a communicator's operations to be
   * issued by one thread at a time, in the same order on every rank, so no two threads number
   * one communicator's operations at once. */
  uint64_t seq = 0, coll = 0;
  if (call->is_op && c != NULL) {
    seq = atomic_load_explicit(&c->ops, memory_order_relaxed) + 1;
    atomic_store_explicit(&c->ops, seq, memory_order_relaxed);
    /* Point-to-point calls are matched by peer pair, not in one order on every rank: the
     * collectives get a count of their own, which every rank shares. */
    if (call->fn != NCCLSHIM_FN_ncclSend && call->fn != NCCLSHIM_FN_ncclRecv) {
      coll = atomic_load_explicit(&c->colls, memory_order_relaxed) + 1;
      atomic_store_explicit(&c->colls, coll, memory_order_relaxed);
    }
  }
  uint64_t index = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
  rec_entry *e = slot_of(index);
  /* The slots a few calls on are this thread's next ones in a single-threaded loop: start
   * fetching them for writing now, so that their cache miss overlaps this call's work. */
  __builtin_prefetch(slot_of(index + PREFETCH_AHEAD), 1);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  if (ncs_rec_here.tid == 0) ncs_rec_here.tid = (int)syscall(SYS_gettid);

  atomic_store_explicit(&e->tag, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->result, result, memory_order_relaxed);
  e->fn = call->fn;
  e->rank = c != NULL ? atomic_load_explicit(&c->rank, memory_order_relaxed) : call->rank;
  e->datatype = call->datatype;
  e->op = call->op;
  e->root = call->root;
  e->peer = call->peer;
  e->thread = ncs_rec_here.tid;
  e->captured = call->captured;
  e->seq = seq;
  e->coll = coll;
  e->count = call->count;
  e->has_count = call->has_count;
  e->comm_id = c != NULL ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
  e->comm = (uintptr_t)call->comm;
  e->stream = (uintptr_t)call->stream;
  e->start_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
  e->has_config = 0;
  atomic_store_explicit(&e->tag, index + 1, memory_order_release);
  call->index = index + 1;
  call->seq = seq;
}

void (*_Atomic ncs_rec_on_first_call)(void);

void ncs_rec_begin(ncs_rec_call *call) {
  if (__builtin_expect(atomic_load_explicit(&ncs_rec_on_first_call, memory_order_relaxed) != NULL,
                       0)) {
    void (*first)(void) = atomic_exchange(&ncs_rec_on_first_call, NULL);
    if (first != NULL) first();
  }
  call->skip = ncs_rec_here.depth++ > 0; /* NCCL calling its own name: forwarded, not recorded */
  call->index = 0;
  if (call->skip || call->is_query) return;
  call->captured = call->is_op && ncs_rec_capturing(call->stream);
  publish(call, NCCLSHIM_REC_PENDING);
  /* The program gives up on a communicator (PyTorch's watchdog does, then abort()): what
   * every rank did up to here is what a hang's diagnosis needs. */
  if (call->fn == NCCLSHIM_FN_ncclCommAbort) ncs_rec_dump("abort", call->fn, NCCLSHIM_REC_NONE);
}

static int failed(int result) {
  return result != ncclSuccess && result != ncclInProgress && result != NCCLSHIM_REC_NO_RESULT &&
         result != NCCLSHIM_REC_PENDING;
}

/* Error dumps are rate-limited: the first per communicator and result code is written,
 * later ones are counted and the count goes into the next dump. */
static void dump_error(const char *why, ncs_rec_comm *c, int fn, int result) {
  uint32_t bit = 1u << ((unsigned)result & 31);
  _Atomic uint32_t *dumped = c != NULL ? &c->dumped : &ncs_rec->global_dumped;
  if (atomic_fetch_or(dumped, bit) & bit) {
    atomic_fetch_add(&ncs_rec->suppressed, 1);
    return;
  }
  ncs_rec_dump(why, fn, result);
}

/* ncclCommGetAsyncError's answer: an error is recorded once per communicator and error. */
static void check_async(ncs_rec_call *call) {
  int reported = (int)*call->async_out;
  if (!failed(reported)) return;
  ncs_rec_comm *c = comm_of(call->comm);
  if (c != NULL && atomic_exchange(&c->async_error, reported) == reported) return;
  publish(call, ncclSuccess);
  dump_error("async-error", c, call->fn, reported);
}

/* A call that made a communicator (init, split, shrink) or ended one (destroy, abort). */
static void made_or_ended(ncs_rec_call *call) {
  if (call->comm_out != NULL) {
    uint64_t nth = 0, parent_id = 0;
    if (call->uid == NULL && call->comm != NULL) {
      ncs_rec_comm *parent = comm_of(call->comm);
      if (parent != NULL) {
        nth = atomic_fetch_add(&parent->splits, 1);
        parent_id = atomic_load(&parent->id);
        parent_id = parent_id == 1 ? 0 : parent_id;
      }
    }
    if (*call->comm_out != NULL) add_comm(call, *call->comm_out, nth, parent_id);
  }
  if (call->fn == NCCLSHIM_FN_ncclCommDestroy || call->fn == NCCLSHIM_FN_ncclCommAbort)
    ncs_rec_end_comm(call->comm, call->fn);
}

/* The config of a ...Config collective NCCL accepted (so it has read the struct, and so may
 * we: never before the call, where a bad pointer would be ours to crash on). The entry is
 * rewritten under its tag, as publish writes it, unless the ring has moved past it. */
static void note_config(const ncs_rec_call *call) {
  rec_entry *e = slot_of(call->index - 1);
  uint64_t mine = call->index;
  /* acq_rel: the writes below stay after the tag's 0 (no fence: TSan takes none). */
  if (!atomic_compare_exchange_strong_explicit(&e->tag, &mine, 0, memory_order_acq_rel,
                                               memory_order_relaxed))
    return;
  const ncclshim_coll_config_t *config = call->coll_config;
  size_t size = config->size;
  const char *alg = size >= offsetof(ncclshim_coll_config_t, algSelection) + sizeof(char *)
                        ? config->algSelection
                        : NULL;
  e->profiler_tag = size >= offsetof(ncclshim_coll_config_t, userProfilerTag) + sizeof(uint64_t)
                        ? config->userProfilerTag
                        : 0;
  size_t n = alg != NULL ? strnlen(alg, sizeof(e->alg) - 1) : 0;
  memcpy(e->alg, alg != NULL ? alg : "", n);
  e->alg[n] = '\0';
  e->has_config = 1;
  atomic_store_explicit(&e->tag, call->index, memory_order_release);
}

void ncs_rec_end(ncs_rec_call *call, int result) {
  ncs_rec_here.depth--;
  if (call->skip) return;
  if (call->index != 0) {
    rec_entry *e = slot_of(call->index - 1);
    if (atomic_load_explicit(&e->tag, memory_order_acquire) == call->index)
      atomic_store_explicit(&e->result, result, memory_order_relaxed);
  }
  int succeeded = result == ncclSuccess || result == ncclInProgress;
  if (succeeded) made_or_ended(call);
  if (succeeded && call->coll_config != NULL && call->index != 0) note_config(call);
  if (ncs_rec->hang_ms != 0) ncs_rec_hang_call(call, result);
  if (call->async_out != NULL && result == ncclSuccess) check_async(call);
  if (failed(result)) {
    if (call->index == 0) publish(call, result); /* a query: recorded now it failed */
    dump_error("error", call->comm != NULL ? ncs_rec_find(call->comm) : NULL, call->fn, result);
  }
}
