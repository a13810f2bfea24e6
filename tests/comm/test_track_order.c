/* The tracker's look (src/track/track_look.c) infers completions from each stream's order,
 * on the strict fake driver (tests/fakes/fake_cuda.h), the tracker driven directly:
 *  - a stream whose work is done costs one query, not one per operation;
 *  - a busy stream's first pending operation is found by halves (about log2(n) queries),
 *    with the counts right;
 *  - two records on one stream at the same time prove nothing about each other: the older
 *    in the queue, recorded last, is pending while the newer has completed;
 *  - the handles that name the calling thread's stream (NULL, per-thread) are each thread's
 *    own: one thread's completed event says nothing of another's;
 *  - a stream destroyed after its work completed, its handle reused: nothing wrong inferred;
 *  - records at random on created streams of two contexts and on the NULL, legacy and
 *    per-thread handles, streams held and released, handles reused: each look finds exactly
 *    the oldest operation still pending;
 *  - threads recording at once on all those handles while another looks: the one operation
 *    that never completes is never lost. */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "tests/fakes/fake_cuda.h"
#include "ncclshim/cuda.h"
#include "track.h"

enum { NOT_READY = 600 };

static fake_cuda_api fake;

/* The owner of every record, when set; else each has an owner of its own, so that none joins
 * another's event: most cases are about what a look infers from distinct events. */
static const void *one_owner;
static const ncclshim_cuda_table *cu;
static ncs_track_driver driver;

static int setup(void **state) {
  (void)state;
  one_owner = NULL;
  fake.reset();
  assert_int_equal(fake.use_device(0), 0);
  return 0;
}

static CUstream new_stream(void) {
  CUstream s = NULL;
  assert_int_equal(cu->cuStreamCreate(&s, 0), 0);
  return s;
}

/* Record operation `seq` on `stream`, labelled `label` (NULL: none); asserted watched. */
static void record_labelled(ncs_tracker *t, CUstream stream, uint64_t seq, const char *label) {
  ncs_track_op op = {.call = "ncclAllReduce",
                     .count = 8,
                     .type = 7,
                     .seq = seq,
                     .n = 1,
                     .owner = one_owner != NULL ? one_owner : (const void *)(uintptr_t)seq};
  if (label != NULL) snprintf(op.label, sizeof(op.label), "%s", label);
  ncs_track_failure why = {NULL, 0};
  assert_int_equal(ncs_track_record(t, stream, &op, &why), 0);
}

static void record(ncs_tracker *t, CUstream stream, uint64_t seq) {
  record_labelled(t, stream, seq, NULL);
}

/* One look; the cuEventQuery calls it made. */
static int look(ncs_tracker *t, ncs_track_seen *seen) {
  int before = fake.count("cuEventQuery");
  CUcontext current = NULL;
  ncs_track_look(t, &current, seen);
  return fake.count("cuEventQuery") - before;
}

static void test_done_stream_costs_one_query(void **state) {
  (void)state;
  enum { OPS = 1000 };
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s = new_stream();
  for (int i = 1; i <= OPS; i++) record(t, s, (uint64_t)i);
  ncs_track_seen seen;
  int queries = look(t, &seen);
  assert_int_equal(seen.pending, 0);
  assert_int_equal(seen.failed, 0);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 0);
  assert_int_equal(queries, 1); /* the newest: every one before it is complete */
  ncs_track_destroy(t);
  assert_int_equal(cu->cuStreamDestroy(s), 0);
}

static void test_busy_stream_found_by_halves(void **state) {
  (void)state;
  enum { OPS = 1000, DONE = 600 };
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s = new_stream();
  fake.set_stream_answer(s, NOT_READY, DONE); /* the first DONE complete, then none */
  for (int i = 1; i <= OPS; i++) record(t, s, (uint64_t)i);
  ncs_track_seen seen;
  int queries = look(t, &seen);
  assert_int_equal(seen.pending, 1);
  assert_int_equal(seen.op.seq, DONE + 1);
  assert_int_equal(ncs_track_counts_of(t).outstanding, OPS - DONE);
  assert_in_range(queries, 1, 2 * 10 + 2); /* log2(1000) is about 10 */
  fake.release_stream(s);
  queries = look(t, &seen);
  assert_int_equal(seen.pending, 0);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 0);
  assert_int_equal(queries, 1);
  ncs_track_destroy(t);
  assert_int_equal(cu->cuStreamDestroy(s), 0);
}

/* A record made on another thread (device 0's context current there); `answer`, when not
 * 0, is what its stream's events answer from then on (set on that thread: a per-thread
 * stream is the thread's own). */
typedef struct recorder {
  ncs_tracker *t;
  CUstream stream;
  uint64_t seq;
  int answer;
} recorder;

static void *record_on_thread(void *arg) {
  recorder *r = arg;
  assert_int_equal(cu->cuCtxSetCurrent(fake.context(0)), 0);
  if (r->answer != 0) fake.set_stream_answer(r->stream, r->answer, 0);
  record(r->t, r->stream, r->seq);
  return NULL;
}

static void test_records_at_once_prove_nothing(void **state) {
  (void)state;
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s = new_stream();
  /* #1's record is held inside cuEventRecord: it is first in the queue. */
  recorder first = {t, s, 1, 0};
  pthread_t thread;
  fake.block_next_record(s);
  assert_int_equal(pthread_create(&thread, NULL, record_on_thread, &first), 0);
  for (int i = 0; i < 5000 && !fake.blocked(); i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
  assert_int_equal(fake.blocked(), 1);
  record(t, s, 2); /* recorded on the stream before #1's event: completes */
  fake.set_stream_answer(s, NOT_READY, 0);
  fake.release_record(); /* #1's event goes on the stream now, behind #2's: pending */
  assert_int_equal(pthread_join(thread, NULL), 0);
  ncs_track_seen seen;
  look(t, &seen);
  assert_int_equal(seen.pending, 1);
  assert_int_equal(seen.op.seq, 1);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 2); /* #2 leaves after #1 */
  fake.release_stream(s);
  ncs_track_destroy(t);
  assert_int_equal(cu->cuStreamDestroy(s), 0);
}

static void test_per_thread_handles_are_each_threads(void **state) {
  (void)state;
  CUstream handles[] = {NULL, NCCLSHIM_CU_STREAM_PER_THREAD};
  for (size_t h = 0; h < sizeof(handles) / sizeof(handles[0]); h++) {
    setup(NULL);
    ncs_tracker *t = ncs_track_create(&driver);
    /* Another thread's operation on its own stream of that handle, never completing... */
    recorder other = {t, handles[h], 1, NOT_READY};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, record_on_thread, &other), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    /* ... then this thread's, completed. */
    fake.set_stream_answer(handles[h], FAKE_CUDA_ANY_RESULT, 0);
    record(t, handles[h], 2);
    ncs_track_seen seen;
    look(t, &seen);
    assert_int_equal(seen.pending, 1);
    assert_int_equal(seen.op.seq, 1);
    fake.complete_all();
    ncs_track_destroy(t);
  }
}

static void test_reused_handle_infers_nothing_wrong(void **state) {
  (void)state;
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s = new_stream();
  for (int i = 1; i <= 8; i++) record(t, s, (uint64_t)i);
  assert_int_equal(cu->cuStreamSynchronize(s), 0);
  assert_int_equal(cu->cuStreamDestroy(s), 0);
  CUstream again = new_stream();
  assert_ptr_equal(again, s); /* the driver's handle, reused */
  fake.set_stream_answer(again, NOT_READY, 0);
  for (int i = 9; i <= 16; i++) record(t, again, (uint64_t)i);
  ncs_track_seen seen;
  look(t, &seen);
  assert_int_equal(seen.pending, 1);
  assert_int_equal(seen.op.seq, 9);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 8);
  fake.release_stream(again);
  ncs_track_destroy(t);
  assert_int_equal(cu->cuStreamDestroy(again), 0);
}

/* A small deterministic generator: the same sequence on every libc. */
static unsigned next_random(unsigned *x) {
  *x = *x * 1103515245u + 12345u;
  return (*x >> 16) & 0x7fff;
}

/* NULL and the legacy handle name one stream of the fake (a context's legacy stream). */
static int fake_stream_of_handle(int k) { return k == 2 ? 0 : k; }

static void test_random_records_the_oldest_pending_found(void **state) {
  (void)state;
  enum { HANDLES = 7, OPS = 2000 };
  unsigned x = 1;
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s[HANDLES];
  int held[HANDLES] = {0};
  for (int i = 0; i < HANDLES; i++)
    s[i] = i == 0   ? NULL
           : i == 1 ? NCCLSHIM_CU_STREAM_PER_THREAD
           : i == 2 ? NCCLSHIM_CU_STREAM_LEGACY
                    : fake.new_stream(i % 2); /* both devices' contexts */
  static int op_handle[OPS + 1], op_pending[OPS + 1];
  for (int seq = 1; seq <= OPS; seq++) {
    int k = (int)(next_random(&x) % HANDLES), f = fake_stream_of_handle(k);
    int action = (int)(next_random(&x) % 12);
    if (action == 0 && !held[f]) { /* from now on its events pend, as a hung kernel's */
      fake.set_stream_answer(s[f], NOT_READY, 0);
      held[f] = 1;
    } else if (action == 1 && held[f]) {
      fake.release_stream(s[f]);
      held[f] = 0;
      for (int j = 1; j < seq; j++)
        if (fake_stream_of_handle(op_handle[j]) == f) op_pending[j] = 0;
    } else if (action == 2 && k >= 3 && !held[f]) { /* its handle reused, maybe elsewhere */
      assert_int_equal(cu->cuStreamSynchronize(s[k]), 0);
      assert_int_equal(cu->cuStreamDestroy(s[k]), 0);
      s[k] = fake.new_stream((int)(next_random(&x) % 2));
    }
    record(t, s[k], (uint64_t)seq);
    op_handle[seq] = k;
    op_pending[seq] = held[f];
    if (next_random(&x) % 5 != 0) continue;
    /* A look, this thread's context kept (the look changes it to the events' own). */
    CUcontext mine = NULL;
    assert_int_equal(cu->cuCtxGetCurrent(&mine), 0);
    ncs_track_seen seen;
    look(t, &seen);
    assert_int_equal(cu->cuCtxSetCurrent(mine), 0);
    int oldest = 0;
    for (int j = 1; j <= seq && oldest == 0; j++)
      if (op_pending[j]) oldest = j;
    assert_int_equal(seen.failed, 0);
    assert_int_equal(seen.pending, oldest != 0);
    if (oldest != 0) assert_int_equal(seen.op.seq, oldest);
  }
  fake.complete_all();
  ncs_track_destroy(t);
}

/* Records of one owner on one stream by one thread, with no look between them, share one
 * event: it is recorded again for each (a call of cuEventRecord each, on the recording
 * thread), and a look's query answers for all of them: the oldest is named, with how many
 * its event covers. A look closes the group; another owner, another thread, a labelled
 * replay, and a record whose join the driver refused, each take an event of their own. */
static void test_joins_between_two_looks(void **state) {
  (void)state;
  static const char owner = 'a', other = 'b';
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream s = new_stream();
  fake.set_stream_answer(s, NOT_READY, 1); /* #1 completes, then nothing */
  one_owner = &owner;
  int created = fake.count("cuEventCreate"), records = fake.count("cuEventRecord");
  for (uint64_t seq = 1; seq <= 3; seq++) record(t, s, seq);
  assert_int_equal(fake.count("cuEventCreate") - created, 1);
  assert_int_equal(fake.count("cuEventRecord") - records, 3);
  ncs_track_seen seen;
  assert_int_equal(look(t, &seen), 1); /* one query for the three */
  assert_int_equal(seen.pending, 1);
  assert_int_equal(seen.op.seq, 1); /* complete itself, but its event now stands for #3 */
  assert_int_equal(seen.op.n, 3);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 3);
  /* After the look: a group of its own (a new event: the first is still pending). */
  created = fake.count("cuEventCreate");
  record(t, s, 4);
  record(t, s, 5);
  assert_int_equal(fake.count("cuEventCreate") - created, 1);
  /* Another owner, a replay, another thread: none joins, none is joined. */
  one_owner = &other;
  record(t, s, 6);
  one_owner = &owner;
  record_labelled(t, s, 7, "decode");
  record(t, s, 8);
  recorder r = {t, s, 9, 0};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, record_on_thread, &r), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  record(t, s, 10); /* #9, another thread's, is the stream's last: a group of its own */
  assert_int_equal(fake.count("cuEventCreate") - created, 6);
  /* The driver refuses a join's record: the operation gets an event of its own. */
  fake.inject("cuEventRecord", 1, s, 999, 1);
  record(t, s, 11);
  fake.inject("cuEventRecord", 0, NULL, 0, 0);
  assert_int_equal(fake.count("cuEventCreate") - created, 7);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 11);
  fake.release_stream(s);
  look(t, &seen);
  assert_int_equal(seen.pending, 0);
  assert_int_equal(ncs_track_counts_of(t).outstanding, 0);
  ncs_track_destroy(t);
  assert_int_equal(cu->cuStreamDestroy(s), 0);
}

/* Threads recording at once on every kind of handle, while another looks. */
typedef struct hammer {
  ncs_tracker *t;
  CUstream held;
  int id;
} hammer;

enum { HAMMER_RECORDS = 3000 };
static atomic_int hammer_stop, hammer_lost;

static void *hammer_thread(void *arg) {
  hammer *h = arg;
  assert_int_equal(cu->cuCtxSetCurrent(fake.context(h->id % 2)), 0);
  CUstream own = fake.new_stream(h->id % 2);
  CUstream handles[] = {NULL, NCCLSHIM_CU_STREAM_PER_THREAD, NCCLSHIM_CU_STREAM_LEGACY, own,
                        h->held};
  for (int i = 0; i < HAMMER_RECORDS; i++)
    record(h->t, handles[(i * 7 + h->id) % 5], (uint64_t)(1000000 * (h->id + 1) + i));
  assert_int_equal(cu->cuStreamSynchronize(own), 0);
  assert_int_equal(cu->cuStreamDestroy(own), 0);
  return NULL;
}

static void *looker_thread(void *arg) {
  ncs_tracker *t = arg;
  CUcontext current = NULL;
  while (!atomic_load(&hammer_stop)) {
    ncs_track_seen seen;
    ncs_track_look(t, &current, &seen);
    if (seen.failed || !seen.pending) atomic_store(&hammer_lost, 1); /* #1 never completes */
  }
  return NULL;
}

static void records_at_once_lose_no_hang(void) {
  enum { THREADS = 4 };
  ncs_tracker *t = ncs_track_create(&driver);
  CUstream held = new_stream();
  fake.set_stream_answer(held, NOT_READY, 0);
  record(t, held, 1);
  atomic_store(&hammer_stop, 0);
  atomic_store(&hammer_lost, 0);
  pthread_t looker, threads[THREADS];
  hammer h[THREADS];
  assert_int_equal(pthread_create(&looker, NULL, looker_thread, t), 0);
  for (int i = 0; i < THREADS; i++) {
    h[i] = (hammer){t, held, i};
    assert_int_equal(pthread_create(&threads[i], NULL, hammer_thread, &h[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_join(threads[i], NULL), 0);
  atomic_store(&hammer_stop, 1);
  assert_int_equal(pthread_join(looker, NULL), 0);
  assert_int_equal(atomic_load(&hammer_lost), 0);
  ncs_track_seen seen;
  look(t, &seen);
  assert_int_equal(seen.pending, 1);
  assert_int_equal(seen.op.seq, 1);
  /* Nothing leaves the queue behind #1. */
  assert_int_equal(ncs_track_counts_of(t).outstanding, 1 + THREADS * HAMMER_RECORDS);
  fake.release_stream(held);
  ncs_track_destroy(t);
}

static void test_records_at_once_on_every_handle_lose_no_hang(void **state) {
  (void)state;
  records_at_once_lose_no_hang();
}

/* The same, every record of one owner: each thread's records on a stream join between looks
 * (a look closes them while they record). */
static void test_joins_at_once_lose_no_hang(void **state) {
  static const char owner = 'o';
  setup(state);
  one_owner = &owner;
  records_at_once_lose_no_hang();
}

int main(void) {
  if (fake_cuda_bind(NULL, &fake) != 0) return 1;
  cu = ncclshim_cuda_functions(ncclshim_cuda_default());
  ncs_track_driver_of_table(cu, &driver);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_done_stream_costs_one_query, setup),
      cmocka_unit_test_setup(test_busy_stream_found_by_halves, setup),
      cmocka_unit_test_setup(test_records_at_once_prove_nothing, setup),
      cmocka_unit_test_setup(test_per_thread_handles_are_each_threads, setup),
      cmocka_unit_test_setup(test_reused_handle_infers_nothing_wrong, setup),
      cmocka_unit_test_setup(test_random_records_the_oldest_pending_found, setup),
      cmocka_unit_test_setup(test_records_at_once_on_every_handle_lose_no_hang, setup),
      cmocka_unit_test_setup(test_joins_between_two_looks, setup),
      cmocka_unit_test(test_joins_at_once_lose_no_hang),
  };
  return cmocka_run_group_tests_name("track-order", tests, NULL, NULL);
}
