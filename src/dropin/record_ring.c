/* Recording one call: the per-thread nesting guard, the communicator registry (sequence
 * numbers and cross-rank identities) and the lock-free ring. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"
#include "record.h"
#include "record_state.h"

rec_state *ncclshim_rec;

/* Per thread: how deep in recorded calls (NCCL calling its own names through the drop-in
 * makes it 2) and the thread id, asked of the kernel once. */
static __thread struct {
  int depth;
  int tid;
} here NCCLSHIM_THREAD_MODEL;

/* ---- Communicators: open addressing on the pointer, slots never freed; a communicator
 * made again at the same address starts afresh. ---- */

static uint64_t mix(uint64_t h, const void *bytes, size_t size) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
  return h;
}

static ncclshim_rec_comm *find_comm(const void *comm, int add) {
  uintptr_t key = (uintptr_t)comm;
  if (key == 0) return NULL;
  size_t slot = (size_t)((key >> 4) * 0x9e3779b97f4a7c15ull >> 52) & (REC_COMMS - 1);
  for (size_t probe = 0; probe < REC_COMMS; probe++, slot = (slot + 1) & (REC_COMMS - 1)) {
    ncclshim_rec_comm *c = &ncclshim_rec->comms[slot];
    uintptr_t seen = atomic_load_explicit(&c->key, memory_order_acquire);
    if (seen == key) return c;
    if (seen != 0) continue;
    if (!add) return NULL;
    if (atomic_compare_exchange_strong(&c->key, &seen, key)) {
      atomic_store(&c->rank, NCCLSHIM_REC_NONE); /* made before the recorder saw it */
      atomic_store(&c->nranks, NCCLSHIM_REC_NONE);
      atomic_store(&c->created_by, -1);
      return c;
    }
    if (seen == key) return c; /* another thread added it */
  }
  return NULL; /* full: recorded without a communicator */
}

/* A communicator just made by `call`: its identity is the unique id's hash, or its parent's
 * with the parent's child count and the color (the same on every rank of a split). */
static void add_comm(const ncclshim_rec_call *call, const void *made) {
  ncclshim_rec_comm *c = find_comm(made, 1);
  if (c == NULL) return;
  uint64_t id = 0xcbf29ce484222325ull;
  ncclshim_rec_comm *parent = find_comm(call->comm, 0);
  if (call->uid != NULL) {
    id = mix(id, call->uid, sizeof(ncclUniqueId));
  } else if (parent != NULL) {
    uint64_t parent_id = atomic_load(&parent->id);
    uint64_t nth = atomic_fetch_add(&parent->children, 1);
    id = mix(mix(mix(id, &parent_id, sizeof(parent_id)), &nth, sizeof(nth)), &call->color,
             sizeof(call->color));
  }
  atomic_store(&c->ops, 0);
  atomic_store(&c->children, 0);
  atomic_store(&c->async_error, 0);
  atomic_store(&c->id, id | 1); /* never 0, which means "unknown" */
  atomic_store(&c->rank, call->uid != NULL ? call->rank : NCCLSHIM_REC_NONE);
  atomic_store(&c->nranks, call->uid != NULL ? call->nranks : NCCLSHIM_REC_NONE);
  atomic_store(&c->created_by, call->fn);
  int none = NCCLSHIM_REC_NONE;
  if (call->uid != NULL && call->rank != NCCLSHIM_REC_NONE)
    atomic_compare_exchange_strong(&ncclshim_rec->process_rank, &none, call->rank);
}

/* ---- The ring ---- */

static rec_entry *slot_of(uint64_t index) {
  return &ncclshim_rec->entries[index & ncclshim_rec->mask];
}

static void publish(ncclshim_rec_call *call, int result) {
  rec_state *r = ncclshim_rec;
  ncclshim_rec_comm *c = find_comm(call->comm, 1);
  uint64_t seq = call->is_op && c != NULL ? atomic_fetch_add(&c->ops, 1) + 1 : 0;
  uint64_t index = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
  rec_entry *e = slot_of(index);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  if (here.tid == 0) here.tid = (int)syscall(SYS_gettid);

  atomic_store_explicit(&e->tag, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->result, result, memory_order_relaxed);
  e->fn = call->fn;
  e->rank = c != NULL ? atomic_load_explicit(&c->rank, memory_order_relaxed) : call->rank;
  e->datatype = call->datatype;
  e->op = call->op;
  e->root = call->root;
  e->peer = call->peer;
  e->thread = here.tid;
  e->seq = seq;
  e->count = call->count;
  e->has_count = call->has_count;
  e->comm_id = c != NULL ? atomic_load_explicit(&c->id, memory_order_relaxed) : 0;
  e->comm = (uintptr_t)call->comm;
  e->stream = (uintptr_t)call->stream;
  e->start_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
  atomic_store_explicit(&e->tag, index + 1, memory_order_release);
  call->index = index + 1;
}

void ncclshim_rec_begin(ncclshim_rec_call *call) {
  call->skip = here.depth++ > 0; /* NCCL calling its own name: forwarded, not recorded */
  call->index = 0;
  if (!call->skip && !call->is_query) publish(call, NCCLSHIM_REC_PENDING);
}

static int failed(int result) {
  return result != ncclSuccess && result != ncclInProgress && result != NCCLSHIM_REC_NO_RESULT;
}

/* ncclCommGetAsyncError's answer: dumped the first time a communicator reports an error. */
static void check_async(ncclshim_rec_call *call) {
  int reported = (int)*call->async_out;
  if (!failed(reported)) return;
  ncclshim_rec_comm *c = find_comm(call->comm, 1);
  if (c != NULL && atomic_exchange(&c->async_error, reported) == reported) return;
  publish(call, ncclSuccess);
  ncclshim_rec_dump("async-error", call->fn, reported);
}

void ncclshim_rec_end(ncclshim_rec_call *call, int result) {
  here.depth--;
  if (call->skip) return;
  if (call->index != 0) {
    rec_entry *e = slot_of(call->index - 1);
    if (atomic_load_explicit(&e->tag, memory_order_acquire) == call->index)
      atomic_store_explicit(&e->result, result, memory_order_relaxed);
  }
  if (call->comm_out != NULL && (result == ncclSuccess || result == ncclInProgress) &&
      *call->comm_out != NULL)
    add_comm(call, *call->comm_out);
  if (call->async_out != NULL && result == ncclSuccess) check_async(call);
  if (failed(result)) {
    if (call->index == 0) publish(call, result); /* a query: recorded now it failed */
    ncclshim_rec_dump("error", call->fn, result);
  }
}
