/* The watchdog against a hostile user, on the fakes (part of test_comm_watchdog; run under
 * TSan and ASan): a record blocked inside cuEventRecord (the fake holds it until the test
 * lets go) while
 *  - the callback unwatches, aborts or destroys its communicator: nothing the recording
 *    thread holds is freed under it, and the watch goes once that record is done;
 *  - another communicator passes its deadline: it is failed on time, and
 *    ncclshim_watchdog_stop returns at once;
 *  - a second thread records on the same communicator: refused;
 * and the callback calling ncclshim_watchdog_stop: refused, nothing stopped; and a thread
 * reading the state without a pause: whenever it sees FAILED, the message is there. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "watchdog_support.h"

#define S test_stream(0)
#define OTHER test_stream(1)

typedef struct recorder {
  pthread_t thread;
  ncclshim_comm *comm;
  ncclshim_status status;
} recorder;

static void *record_once(void *arg) {
  recorder *r = arg;
  r->status = ncclshim_comm_record(r->comm, S, "ncclAllReduce", 64, ncclFloat32);
  return NULL;
}

/* A thread whose record is blocked in cuEventRecord until fake_release_record(). */
static void start_blocked_record(recorder *r, ncclshim_comm *comm) {
  r->comm = comm;
  r->status = NCCLSHIM_INVALID_ARGUMENT;
  fake_block_next_record(S);
  assert_int_equal(pthread_create(&r->thread, NULL, record_once, r), 0);
  WAIT_FOR(fake_blocked(), 5000);
  assert_int_equal(fake_blocked(), 1);
}

static void finish_record(recorder *r) {
  fake_release_record();
  assert_int_equal(pthread_join(r->thread, NULL), 0);
}

static void unwatch_it(ncclshim_comm *comm) { ncclshim_comm_unwatch(comm); }
static void abort_it(ncclshim_comm *comm) { ncclshim_comm_abort(comm, 5000); }
static void destroy_it(ncclshim_comm *comm) { ncclshim_comm_destroy(comm, 5000); }

void test_callback_frees_nothing_a_record_holds(void **state) {
  (void)state;
  void (*actions[])(ncclshim_comm *) = {unwatch_it, abort_it, destroy_it};
  for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
    setup(NULL);
    ncclshim_watchdog *dog = start();
    ncclshim_nccl *nccl;
    int destroyed = fake_cuda_events(DESTROYED), created = fake_cuda_events(CREATED);
    ncclshim_comm *comm = watched(&nccl, dog);
    callback_action = actions[i];
    recorder r;
    start_blocked_record(&r, comm);
    /* Another thread at the same time: refused, whatever the first one does. */
    assert_int_equal(ncclshim_comm_record(comm, S, "ncclAllReduce", 1, ncclFloat32),
                     NCCLSHIM_INVALID_ARGUMENT);
    assert_message("is recorded on by another thread at the same time");
    /* The blocked record's operation passes its deadline: failed, and the callback acts. */
    WAIT_FOR(atomic_load(&callbacks) > 0, 20 * TIMEOUT_MS);
    assert_int_equal(atomic_load(&callbacks), 1);
    assert_int_equal(fake_blocked(), 1); /* the record is still inside the driver */
    assert_non_null(strstr(callback_message, "ncclAllReduce #1 (count 64, ncclFloat32)"));
    assert_int_equal(fake_cuda_events(DESTROYED), destroyed); /* its events are in use */
    finish_record(&r);
    assert_int_equal(r.status, NCCLSHIM_OK);
    /* Unwatched by the callback (abort and unwatch; a destroy of a failed one does not):
     * the watch, and its one event, went when the record was done. */
    int made = fake_cuda_events(CREATED) - created;
    assert_int_equal(made, 1);
    assert_int_equal(fake_cuda_events(DESTROYED) - destroyed, actions[i] == destroy_it ? 0 : made);
    assert_int_equal(ncclshim_comm_record(comm, S, "ncclAllReduce", 1, ncclFloat32),
                     NCCLSHIM_TIMEOUT); /* failed: that answer comes first */
    finish_failed(comm);
    ncclshim_comm_free(comm);
    assert_int_equal(ncclshim_watchdog_stop(dog), NCCLSHIM_OK);
    ncclshim_nccl_close(nccl);
    assert_int_equal(fake_cuda_events(DESTROYED) - destroyed, made);
  }
}

void test_slow_record_delays_nothing_else(void **state) {
  (void)state;
  ncclshim_watchdog *dog = start();
  ncclshim_nccl *nccl;
  ncclshim_comm *slow = watched(&nccl, dog);
  ncclshim_comm *other = fake_comm(nccl, 1);
  assert_int_equal(ncclshim_comm_watch(other, dog, TIMEOUT_MS), NCCLSHIM_OK);
  int destroyed = fake_cuda_events(DESTROYED), created = fake_cuda_events(CREATED);
  recorder r;
  start_blocked_record(&r, slow);
  fake_cuda_event_query(NOT_READY);
  int64_t start = now_ms();
  assert_int_equal(all_reduce_on(other, OTHER, 128), NCCLSHIM_OK);
  WAIT_FOR(ncclshim_comm_state_of(other) != NCCLSHIM_COMM_READY, 20 * TIMEOUT_MS);
  assert_int_equal(ncclshim_comm_state_of(other), NCCLSHIM_COMM_FAILED);
  /* on time, not after the slow record (which waits until released) */
  assert_true(now_ms() - start < test_slack_ms(10 * TIMEOUT_MS));
  assert_int_equal(fake_blocked(), 1);
  start = now_ms();
  assert_int_equal(ncclshim_watchdog_stop(dog), NCCLSHIM_OK);
  assert_true(now_ms() - start < test_slack_ms(10 * TIMEOUT_MS)); /* nor waits for the record */
  assert_int_equal(fake_blocked(), 1);
  /* Unwatched by the stop: the other's event went; the slow one's goes once its record is
   * done. */
  assert_int_equal(fake_cuda_events(DESTROYED) - destroyed, 1);
  finish_record(&r);
  assert_int_equal(fake_cuda_events(CREATED) - created, 2);
  assert_int_equal(fake_cuda_events(DESTROYED) - destroyed, 2);
  assert_int_equal(r.status, NCCLSHIM_OK);
  /* Its blocked operation passed its deadline too: failed meanwhile, that answer first. */
  assert_int_equal(ncclshim_comm_record(slow, S, "ncclAllReduce", 1, ncclFloat32),
                   NCCLSHIM_TIMEOUT);
  assert_int_equal(ncclshim_comm_abort(other, 5000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(slow, 5000), NCCLSHIM_OK);
  ncclshim_comm_free(other);
  ncclshim_comm_free(slow);
  ncclshim_nccl_close(nccl);
}

static ncclshim_watchdog *callback_dog;
static atomic_int stop_answer = -1;
static void stop_it(ncclshim_comm *comm) {
  (void)comm;
  atomic_store(&stop_answer, (int)ncclshim_watchdog_stop(callback_dog));
}

void test_stop_from_the_callback_refused(void **state) {
  (void)state;
  ncclshim_watchdog *dog = callback_dog = start();
  ncclshim_nccl *nccl;
  ncclshim_comm *first = watched(&nccl, dog);
  ncclshim_comm *second = fake_comm(nccl, 1);
  assert_int_equal(ncclshim_comm_watch(second, dog, TIMEOUT_MS), NCCLSHIM_OK);
  callback_action = stop_it;
  fake_cuda_event_query(NOT_READY);
  assert_int_equal(all_reduce(first, 8), NCCLSHIM_OK);
  wait_for_failure(first, 20 * TIMEOUT_MS);
  assert_int_equal(atomic_load(&stop_answer), NCCLSHIM_INVALID_ARGUMENT);
  /* Nothing stopped: the watchdog still fails the second one. */
  callback_action = NULL;
  assert_int_equal(all_reduce(second, 8), NCCLSHIM_OK);
  WAIT_FOR(atomic_load(&callbacks) >= 2, 20 * TIMEOUT_MS);
  assert_int_equal(atomic_load(&callbacks), 2);
  assert_int_equal(ncclshim_comm_abort(first, 5000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(second, 5000), NCCLSHIM_OK);
  ncclshim_comm_free(first);
  ncclshim_comm_free(second);
  assert_int_equal(ncclshim_watchdog_stop(dog), NCCLSHIM_OK);
  ncclshim_nccl_close(nccl);
}

/* The state is read without the lock: the thread that sees FAILED the moment the watchdog
 * sets it must find the watchdog's message already there (it once came after the state, an
 * abort thread's start later). */
void test_failed_state_comes_with_its_message(void **state) {
  (void)state;
  ncclshim_watchdog *dog = start_every(1);
  enum { ROUNDS = 10 };
  for (int round = 0; round < ROUNDS; round++) {
    ncclshim_nccl *nccl;
    ncclshim_comm *comm = watched_for(&nccl, dog, 5);
    fake_cuda_event_query(NOT_READY);
    assert_int_equal(all_reduce(comm, 8), NCCLSHIM_OK);
    int64_t limit = now_ms() + test_slack_ms(5000);
    while (ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY && now_ms() < limit) {
    }
    assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
    assert_non_null(strstr(ncclshim_comm_failure(comm), "ncclAllReduce #1"));
    fake_cuda_event_query(0);
    assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
    ncclshim_comm_free(comm);
    ncclshim_nccl_close(nccl);
  }
  assert_int_equal(ncclshim_watchdog_stop(dog), NCCLSHIM_OK);
}
