/* The watchdog on the fakes: a blocking communicator whose operations are recorded with
 * events (tests/comm/fake_cuda_capture.c) and watched by the watchdog's thread.
 *  - events that fire: nothing happens, however long the test runs past the timeout;
 *  - an event that never fires (work that never completes: a withheld or stopped peer): the
 *    communicator fails with TIMEOUT, the message names the oldest operation, the abort ran
 *    once, the callback came once, and every checked call answers the failure at once;
 *  - an error NCCL reports (a killed peer over sockets): NCCL_ERROR naming NCCL's code;
 *  - a failing cuEventQuery: CUDA_ERROR;
 *  - an abort that hangs: the watchdog still reports and stops promptly;
 *  - a full pool, the pool's life (events made at watch time only), bad arguments;
 *  - the race the design must survive (run under TSan): the enqueueing thread records as fast
 *    as it can while the watchdog fails and aborts the communicator. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "watchdog_support.h"

static void test_events_that_fire_never_fail(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  for (int i = 0; i < 50; i++) assert_int_equal(all_reduce(comm, 256), NCCLSHIM_OK);
  outlast(comm, 3 * TIMEOUT_MS); /* well past the deadline: the events fired */
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_true(fake_cuda_events(QUERIED) > 0); /* the watchdog did look */
  assert_int_equal(atomic_load(&callbacks), 0);
  assert_string_equal(ncclshim_comm_failure(comm), "");
  assert_int_equal(fake_count("ncclCommAbort"), 0);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
}

static void test_event_that_never_fires(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(all_reduce(comm, 64), NCCLSHIM_OK);
  assert_int_equal(all_reduce(comm, 64), NCCLSHIM_OK); /* #1 and #2 finish */
  wait_until_done(comm, 20 * TIMEOUT_MS);
  fake_cuda_event_query(NOT_READY); /* from #3 on, the work never completes */
  assert_int_equal(all_reduce(comm, 256), NCCLSHIM_OK);
  assert_int_equal(all_reduce(comm, 512), NCCLSHIM_OK);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(atomic_load(&callbacks), 1);
  assert_int_equal(callback_status, NCCLSHIM_TIMEOUT);
  assert_non_null(strstr(callback_message, "ncclAllReduce #3 (count 256, ncclFloat32)"));
  assert_non_null(strstr(callback_message, "past its deadline of 100 ms"));
  assert_non_null(strstr(callback_message, "the watchdog started ncclCommAbort"));
  assert_string_equal(ncclshim_comm_failure(comm), callback_message);
  /* Every checked call answers at once; the raw handle is gone. */
  assert_null(ncclshim_comm_raw(comm));
  int64_t start = now_ms();
  assert_int_equal(all_reduce(comm, 8), NCCLSHIM_TIMEOUT);
  assert_message("the watchdog failed communicator rank 0 of 2: ncclAllReduce #3");
  assert_message("ncclAllReduce #3");
  assert_int_equal(ncclshim_comm_record(comm, NULL, "ncclBroadcast", 1, ncclInt8),
                   NCCLSHIM_TIMEOUT);
  int timeout_ms = (int)test_slack_ms(10000);
  assert_int_equal(ncclshim_comm_wait(comm, timeout_ms), NCCLSHIM_TIMEOUT);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, timeout_ms), NCCLSHIM_TIMEOUT);
  assert_int_equal(ncclshim_comm_destroy(comm, timeout_ms), NCCLSHIM_NCCL_ERROR);
  assert_true(now_ms() - start < timeout_ms / 2); /* none of them waited for its timeout */
  /* The abort ran once, on the watchdog's behalf; the user's abort waits for that one. */
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
  assert_int_equal(atomic_load(&callbacks), 1);
}

static void test_nccl_error(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_event_query(NOT_READY);
  assert_int_equal(all_reduce(comm, 1024), NCCLSHIM_OK);
  fake_peer_lost(2, ncclRemoteError); /* a killed peer, reported by the transport */
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(callback_status, NCCLSHIM_NCCL_ERROR);
  assert_non_null(strstr(callback_message, "ncclRemoteError (6)"));
  assert_non_null(strstr(callback_message, "during ncclAllReduce #1 (count 1024, ncclFloat32)"));
  assert_int_equal(all_reduce(comm, 8), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclRemoteError");
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
}

static void test_nccl_error_with_nothing_outstanding(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_peer_lost(0, ncclSystemError);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_non_null(strstr(callback_message, "no recorded operation outstanding"));
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
}

static void test_event_query_fails(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_event_query(LAUNCH_FAILED);
  assert_int_equal(all_reduce(comm, 16), NCCLSHIM_OK);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(callback_status, NCCLSHIM_CUDA_ERROR);
  assert_non_null(strstr(callback_message, "cuEventQuery failed with"));
  assert_non_null(strstr(callback_message, "(719) for ncclAllReduce #1"));
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
}

static void test_abort_that_hangs(void **state) {
  comm_fixture *f = *state;
  ncclshim_comm *comm = f->comm;
  fake_abort_hang(1);
  fake_cuda_event_query(NOT_READY);
  assert_int_equal(all_reduce(comm, 4), NCCLSHIM_OK);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(atomic_load(&callbacks), 1);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_watchdog_stop(f->dog), NCCLSHIM_OK); /* it never waits for the abort */
  f->dog = NULL;
  assert_true(now_ms() - start < test_slack_ms(2000)); /* the abort hangs until released */
  assert_int_equal(ncclshim_comm_abort(comm, 50), NCCLSHIM_TIMEOUT);
  assert_int_equal(fake_abort_returns(), 0);
  fake_abort_hang(0);
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
}

/* A burst longer than any fixed pool, whose work never completes: every operation is
 * recorded and counted (those recorded between two looks share one event, recorded again for
 * each: the pool grows with the looks, not the operations), and the oldest keeps the
 * deadline. */
static void test_burst_beyond_any_pool_keeps_the_oldest(void **state) {
  (void)state;
  ncclshim_watchdog *dog = start();
  ncclshim_nccl *nccl;
  int created = fake_cuda_events(CREATED);
  ncclshim_comm *comm = watched(&nccl, dog);
  assert_int_equal(fake_cuda_events(CREATED), created); /* events are made as needed */
  fake_cuda_event_query(NOT_READY);
  int recorded = fake_cuda_events(RECORDED);
  enum { BURST = 1000 };
  for (int i = 0; i < BURST; i++) assert_int_equal(all_reduce(comm, 32), NCCLSHIM_OK);
  assert_int_equal(fake_cuda_events(RECORDED) - recorded, BURST);
  ncclshim_watch_counts counts = NCCLSHIM_WATCH_COUNTS_INIT;
  counts.size = 8; /* below the first version's */
  assert_int_equal(ncclshim_comm_watch_counts(comm, &counts), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("out->size is 8, below");
  counts = counts_of(comm);
  assert_int_equal(counts.size, sizeof(counts));
  assert_int_equal(counts.recorded, BURST);
  assert_int_equal(counts.events, BURST);
  assert_int_equal(counts.outstanding, BURST);
  assert_int_equal(counts.captured, 0);
  assert_in_range(fake_cuda_events(CREATED) - created, 1, BURST);
  wait_for_failure(comm, 5000);
  assert_non_null(strstr(ncclshim_comm_failure(comm), "ncclAllReduce #1 (count 32"));
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK); /* also unwatches */
  assert_int_equal(fake_cuda_events(DESTROYED) - fake_cuda_events(CREATED), 0);
  ncclshim_comm_free(comm);
  ncclshim_watchdog_stop(dog);
  ncclshim_nccl_close(nccl);
}

static void test_unwatch_and_stop_release_events(void **state) {
  comm_fixture *f = *state;
  ncclshim_comm *a = f->comm;
  ncclshim_comm *b = fake_comm(f->nccl, 1);
  assert_int_equal(ncclshim_comm_watch(b, f->dog, TIMEOUT_MS), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_unwatch(a), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_unwatch(a), NCCLSHIM_OK); /* not watched: OK */
  assert_int_equal(ncclshim_comm_record(a, NULL, "ncclAllReduce", 1, ncclFloat32),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_message("is not watched");
  assert_int_equal(ncclshim_watchdog_stop(f->dog), NCCLSHIM_OK); /* b is still watched: */
  f->dog = NULL;                                                 /* stop releases it */
  assert_int_equal(fake_cuda_events(DESTROYED), fake_cuda_events(CREATED));
  assert_int_equal(ncclshim_comm_record(b, NULL, "ncclAllReduce", 1, ncclFloat32),
                   NCCLSHIM_INVALID_ARGUMENT);
  ncclshim_comm_free(b);
}

static void test_bad_arguments(void **state) {
  (void)state;
  ncclshim_watchdog *dog = NULL;
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  assert_int_equal(ncclshim_watchdog_start(&options, NULL), NCCLSHIM_INVALID_ARGUMENT);
  options.interval_ms = 0;
  assert_int_equal(ncclshim_watchdog_start(&options, &dog), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("interval_ms is outside 1 .. 60000");
  options.interval_ms = 10;
  options.size = 8;
  assert_int_equal(ncclshim_watchdog_start(&options, &dog), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("options->size is too small");
  assert_null(dog);
  ncclshim_watchdog_stop(NULL);
  assert_int_equal(ncclshim_watchdog_start(NULL, &dog), NCCLSHIM_OK);
  ncclshim_nccl *nccl = fake_open("2.28.9");
  ncclshim_comm *comm = fake_comm(nccl, 1);
  assert_int_equal(ncclshim_comm_watch(NULL, dog, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_watch(comm, NULL, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_watch(comm, dog, 0), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("the timeout is below 1 ms");
  assert_int_equal(ncclshim_comm_watch(comm, dog, 10), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_watch(comm, dog, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("watched already");
  fake_cuda_record_result(LAUNCH_FAILED);
  assert_int_equal(ncclshim_comm_record(comm, NULL, "ncclAllReduce", 1, ncclFloat32),
                   NCCLSHIM_CUDA_ERROR);
  assert_message("cuEventRecord failed");
  assert_int_equal(counts_of(comm).outstanding, 0); /* no event: not watched, not counted */
  assert_int_equal(ncclshim_comm_record(NULL, NULL, "x", 1, ncclFloat32),
                   NCCLSHIM_INVALID_ARGUMENT);
  ncclshim_comm *initializing = fake_comm(nccl, 0);
  assert_int_equal(ncclshim_comm_watch(initializing, dog, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("not ready");
  assert_string_equal(ncclshim_comm_failure(NULL), "");
  assert_string_equal(ncclshim_nccl_type_name(ncclBfloat16), "ncclBfloat16");
  assert_string_equal(ncclshim_nccl_type_name((ncclDataType_t)99), "unknown type");
  ncclshim_comm_free(initializing);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK); /* unwatches */
  ncclshim_comm_free(comm);
  ncclshim_watchdog_stop(dog);
  ncclshim_nccl_close(nccl);
}

/* The enqueueing thread records as fast as it can while the watchdog fails the communicator
 * and starts the abort: under TSan this is the data-race check of the design. */
static void *enqueue_until_failure(void *arg) {
  comm_thread *e = arg;
  ncclshim_status status;
  if (cuda_fake()->use_device(0) != 0) return NULL; /* as a CUDA program's thread does */
  while ((status = all_reduce(e->comm, 128)) == NCCLSHIM_OK) atomic_fetch_add(&e->done, 1);
  return (void *)(intptr_t)(status == NCCLSHIM_TIMEOUT && atomic_load(&e->done) > 0);
}

static void test_failure_while_enqueueing(void **state) {
  (void)state;
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  options.interval_ms = 1;
  ncclshim_watchdog *dog = NULL;
  assert_int_equal(ncclshim_watchdog_start(&options, &dog), NCCLSHIM_OK);
  ncclshim_nccl *nccl = fake_open("2.28.9");
  for (int round = 0; round < 5; round++) {
    ncclshim_comm *comm = fake_comm(nccl, 1);
    assert_int_equal(ncclshim_comm_watch(comm, dog, 20), NCCLSHIM_OK);
    fake_cuda_event_query(round % 2 ? NOT_READY : 0);
    comm_thread e = {comm, 0, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, enqueue_until_failure, &e), 0);
    if (round % 2 == 0) { /* events fire: let it record a while, then stop it */
      WAIT_FOR(atomic_load(&e.done) >= 100, 5000);
      assert_true(atomic_load(&e.done) >= 100);
      fake_cuda_event_query(NOT_READY);
    }
    void *ok = NULL;
    assert_int_equal(pthread_join(thread, &ok), 0);
    assert_true(ok != NULL);
    assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
    assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
    ncclshim_comm_free(comm);
  }
  assert_int_equal(fake_count("ncclCommAbort"), 5);
  ncclshim_watchdog_stop(dog);
  ncclshim_nccl_close(nccl);
}

/* A bounded wait running while the watchdog fails the communicator stops polling NCCL's
 * communicator (the abort may free it) and returns the watchdog's failure, early. */
static void test_wait_meets_the_watchdog(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_event_query(NOT_READY);
  fake_cuda_query(NOT_READY); /* the stream stays busy */
  assert_int_equal(all_reduce(comm, 2048), NCCLSHIM_OK);
  int64_t start = now_ms();
  int timeout_ms = (int)test_slack_ms(20 * TIMEOUT_MS);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, timeout_ms), NCCLSHIM_TIMEOUT);
  assert_true(now_ms() - start < timeout_ms / 2); /* the watchdog's, not its own deadline */
  assert_message("the watchdog failed communicator rank 0 of 2: ncclAllReduce #1");
  fake_cuda_query(0);
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
}

/* NCCLSHIM_COMM_SPLIT_BLOCKING: a non-blocking init, bounded; then a blocking child for the
 * operations. */
static ncclshim_comm *split_comm(ncclshim_nccl *nccl) {
  ncclshim_comm *comm = fake_comm(nccl, NCCLSHIM_COMM_SPLIT_BLOCKING);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_INITIALIZING);
  return comm;
}

static void test_split_blocking(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  ncclshim_comm *comm = split_comm(nccl);
  fake_async(-1, ncclSuccess); /* the init never finishes: the wait is bounded */
  assert_int_equal(ncclshim_comm_wait(comm, 30), NCCLSHIM_TIMEOUT);
  assert_int_equal(fake_count("ncclCommSplit"), 0);
  fake_async(3, ncclSuccess);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_int_equal(fake_count("ncclCommSplit"), 1);
  ncclComm_t child = ncclshim_comm_raw(comm);
  assert_non_null(child);
  /* The child is blocking: a collective on it answers ncclSuccess, and finalize too. */
  ncclshim_watchdog *dog = start();
  assert_int_equal(ncclshim_comm_watch(comm, dog, TIMEOUT_MS), NCCLSHIM_OK);
  assert_int_equal(all_reduce(comm, 64), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommFinalize"), 2); /* the child, then the parent */
  assert_int_equal(fake_count("ncclCommDestroy"), 2);
  ncclshim_comm_free(comm);
  ncclshim_watchdog_stop(dog);
  ncclshim_nccl_close(nccl);
}

static void test_split_blocking_abort_and_errors(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  ncclshim_comm *comm = split_comm(nccl);
  fake_async(1, ncclSuccess); /* the init finishes, then the split stays in progress */
  assert_int_equal(ncclshim_comm_wait(comm, 0), NCCLSHIM_TIMEOUT);
  fake_async(-1, ncclSuccess);
  assert_int_equal(ncclshim_comm_wait(comm, 20), NCCLSHIM_TIMEOUT);
  fake_async(0, ncclSuccess);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommSplit"), 1); /* started once, waited for twice */
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommAbort"), 2); /* the child and the parent */
  ncclshim_comm_free(comm);
  /* The split itself fails: the communicator is FAILED, the message names the split. */
  comm = split_comm(nccl);
  static const step_failure split_fails = {
      ncclshim_comm_wait, "ncclCommSplit", ncclInvalidUsage,
      "ncclCommSplit (into a blocking child) failed: ncclInvalidUsage", NCCLSHIM_COMM_FAILED};
  assert_step_fails(comm, &split_fails);
  ncclshim_comm_free(comm);
  ncclshim_nccl_close(nccl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_events_that_fire_never_fail, watched_2289,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_event_that_never_fires, watched_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_nccl_error, watched_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_nccl_error_with_nothing_outstanding, watched_2289,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_event_query_fails, watched_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_abort_that_hangs, watched_2289, release_fixture),
      cmocka_unit_test_setup(test_burst_beyond_any_pool_keeps_the_oldest, setup),
      cmocka_unit_test_setup_teardown(test_unwatch_and_stop_release_events, watched_2289,
                                      release_fixture),
      cmocka_unit_test_setup(test_bad_arguments, setup),
      cmocka_unit_test_setup(test_failure_while_enqueueing, setup),
      cmocka_unit_test_setup_teardown(test_wait_meets_the_watchdog, watched_2289, release_fixture),
      cmocka_unit_test_setup(test_split_blocking, setup),
      cmocka_unit_test_setup(test_split_blocking_abort_and_errors, setup),
#define CASE_FILE_TEST(test, setup) cmocka_unit_test_setup_teardown(test, setup, release_fixture),
      WATCHDOG_CASE_FILE_TESTS(CASE_FILE_TEST)
#undef CASE_FILE_TEST
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
