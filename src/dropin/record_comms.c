/* The recorder's communicators: a lookup table from ncclComm_t to its record, read without a
 * lock on every recorded call, changed under a mutex when a communicator is made or ends.
 * Records are recycled, never freed (record_state.h says why). */
#include <stdlib.h>

#include "record.h"
#include "record_state.h"

enum { FIRST_SLOTS = 1024 };

static size_t home(const rec_table *t, uintptr_t key) {
  return (size_t)((key >> 4) * 0x9e3779b97f4a7c15ull >> 32) & t->mask;
}

static rec_table *new_table(size_t slots) {
  rec_table *t = calloc(1, sizeof(*t) + slots * sizeof(t->slots[0]));
  if (t != NULL) t->mask = slots - 1;
  return t;
}

static ncs_rec_comm *lookup(const rec_table *t, uintptr_t key) {
  for (size_t i = home(t, key), n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    ncs_rec_comm *c = atomic_load_explicit(&t->slots[i], memory_order_acquire);
    if (c == NULL) return NULL;
    if (atomic_load_explicit(&c->key, memory_order_relaxed) == key) return c;
  }
  return NULL;
}

static void place(rec_table *t, ncs_rec_comm *c) {
  size_t i = home(t, atomic_load_explicit(&c->key, memory_order_relaxed));
  while (atomic_load_explicit(&t->slots[i], memory_order_relaxed) != NULL) i = (i + 1) & t->mask;
  atomic_store_explicit(&t->slots[i], c, memory_order_release);
}

ncs_rec_comm *ncs_rec_find(const void *comm) {
  rec_state *r = ncs_rec;
  uintptr_t key = (uintptr_t)comm;
  if (key == 0) return NULL;
  ncs_rec_comm *c = lookup(atomic_load_explicit(&r->table, memory_order_acquire), key);
  if (c != NULL) return c;
  /* A miss may be a lookup that raced a move: look again, alone. */
  pthread_mutex_lock(&r->lock);
  c = lookup(atomic_load_explicit(&r->table, memory_order_relaxed), key);
  pthread_mutex_unlock(&r->lock);
  return c;
}

/* A record to reuse, else a new one. Under the lock. */
static ncs_rec_comm *take_record(rec_state *r) {
  ncs_rec_comm *c = r->spare;
  if (c != NULL) {
    r->spare = c->next_ended;
    return c;
  }
  if ((c = calloc(1, sizeof(*c))) == NULL) return NULL;
  c->all_next = atomic_load(&r->all);
  atomic_store_explicit(&r->all, c, memory_order_release);
  return c;
}

static int grow(rec_state *r) {
  rec_table *old = atomic_load_explicit(&r->table, memory_order_relaxed);
  rec_table *t = new_table((old->mask + 1) * 2);
  if (t == NULL) return 0;
  for (size_t i = 0; i <= old->mask; i++) {
    ncs_rec_comm *c = atomic_load_explicit(&old->slots[i], memory_order_relaxed);
    if (c != NULL) place(t, c);
  }
  atomic_store_explicit(&r->table, t, memory_order_release);
  return 1;
}

ncs_rec_comm *ncs_rec_add(const void *comm) {
  rec_state *r = ncs_rec;
  uintptr_t key = (uintptr_t)comm;
  if (key == 0) return NULL;
  pthread_mutex_lock(&r->lock);
  rec_table *t = atomic_load_explicit(&r->table, memory_order_relaxed);
  ncs_rec_comm *c = lookup(t, key);
  if (c == NULL && (2 * (r->live + 1) <= t->mask + 1 || grow(r)) && (c = take_record(r)) != NULL) {
    atomic_store(&c->ops, 0);
    atomic_store(&c->colls, 0);
    atomic_store(&c->splits, 0);
    atomic_store(&c->async_error, 0);
    atomic_store(&c->dumped, 0);
    atomic_store(&c->rank, NCCLSHIM_REC_NONE); /* made before the recorder saw it */
    atomic_store(&c->nranks, NCCLSHIM_REC_NONE);
    atomic_store(&c->created_by, -1);
    atomic_store(&c->ended_by, -1);
    atomic_store(&c->shown, key);
    atomic_store(&c->generation, atomic_load(&r->generation));
    atomic_store_explicit(&c->key, key, memory_order_relaxed);
    place(atomic_load_explicit(&r->table, memory_order_relaxed), c);
    r->live++;
  }
  pthread_mutex_unlock(&r->lock);
  return c;
}

/* Out of the table, by backward shift: each later entry of the run moves to the gap if its
 * home allows. A lookup racing a move may miss, and then retries under the lock. */
static void remove_at(rec_table *t, size_t gap) {
  for (size_t i = (gap + 1) & t->mask;; i = (i + 1) & t->mask) {
    ncs_rec_comm *c = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (c == NULL) break;
    size_t h = home(t, atomic_load_explicit(&c->key, memory_order_relaxed));
    /* c may move to the gap when its home is not strictly inside (gap, i]. */
    if (((i - h) & t->mask) >= ((i - gap) & t->mask)) {
      atomic_store_explicit(&t->slots[gap], c, memory_order_release);
      gap = i;
    }
  }
  atomic_store_explicit(&t->slots[gap], NULL, memory_order_release);
}

void ncs_rec_end_comm(const void *comm, int fn) {
  rec_state *r = ncs_rec;
  uintptr_t key = (uintptr_t)comm;
  if (key == 0) return;
  pthread_mutex_lock(&r->lock);
  rec_table *t = atomic_load_explicit(&r->table, memory_order_relaxed);
  for (size_t i = home(t, key), n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    ncs_rec_comm *c = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
    if (c == NULL) break;
    if (atomic_load_explicit(&c->key, memory_order_relaxed) != key) continue;
    remove_at(t, i);
    atomic_store(&c->key, 0);
    atomic_store(&c->ended_by, fn);
    c->next_ended = NULL;
    if (r->ended_tail != NULL)
      r->ended_tail->next_ended = c;
    else
      r->ended_head = c;
    r->ended_tail = c;
    r->live--;
    if (++r->ended > REC_ENDED_KEPT) { /* the oldest to end leaves the dump, to be reused */
      ncs_rec_comm *old = r->ended_head;
      r->ended_head = old->next_ended;
      r->ended--;
      atomic_store(&old->id, 0);
      old->next_ended = r->spare;
      r->spare = old;
    }
    break;
  }
  pthread_mutex_unlock(&r->lock);
}

int ncs_rec_comms_init(rec_state *r) {
  rec_table *t = new_table(FIRST_SLOTS);
  if (t == NULL) return 0;
  atomic_init(&r->table, t);
  pthread_mutex_init(&r->lock, NULL);
  return 1;
}

void ncs_rec_comms_reset(rec_state *r) { pthread_mutex_init(&r->lock, NULL); }
