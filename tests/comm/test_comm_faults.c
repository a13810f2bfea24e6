/* Faults between processes, on the fakes: the logic of the GPU suite's killed-rank cases
 * (tests/gpu/comm/gpu_faults.c), so that CI covers it without GPUs.
 *  - a peer lost while a collective runs and the transport reports it (sockets): the stream
 *    wait ends early with NCCL_ERROR, the communicator is FAILED, only an abort releases it;
 *  - the same where nothing is ever reported (NVLink: the kernel just waits): the stream wait
 *    times out at its deadline, and the abort ends it;
 *  - a peer lost during a non-blocking init, and an init that never completes;
 *  - a peer lost after both registered a symmetric window: the buffer is freed after the abort;
 *  - an abort that takes its time, within its deadline and past it;
 *  - the watchdog on a NCCLSHIM_COMM_SPLIT_BLOCKING communicator: a peer lost silently (the
 *    event never fires) is found after the deadline, never before (how soon after is
 *    bench/gpu/percall.sh's figure), a peer lost and reported is found at the next look;
 *    either way the abort ran and the next call fails at once.
 * Every failed wait's message names the communicator, its state and what was pending. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "comm_fixture.h"
#include "ncclshim/symmem.h"

/* A wait must end at its deadline, never before; how soon after it (within 10 % on the GPU
 * host) is a benchmark's figure (tests/gpu/comm/faults.sh), not a unit test's: under TSan or
 * valgrind, beside other tests, a thread waits its turn. late_ms() only tells "ended" from
 * "hung". */
enum { NOT_READY = 600, DEADLINE_MS = 300 };

static int64_t late_ms(void) { return DEADLINE_MS + test_slack_ms(9 * DEADLINE_MS); }

static int setup(void **state) {
  (void)state;
  fake_cuda_capture(0, 0);
  fake_cuda_query(0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  fake_cuda_query(0);
  return 0;
}

/* A READY communicator, blocking or not, on a fresh 2.28.9 fake. */
static ncclshim_comm *ready_comm(int blocking) {
  ncclshim_comm *comm = fake_comm(fake_open("2.28.9"), blocking);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  return comm;
}

/* All-reduces, each waited for on the stream, as the GPU test's ranks loop; the status of the
 * first that does not finish. `busy_after` all-reduces finish, then the stream stays busy (the
 * kernel waits for the dead peer). */
static ncclshim_status loop_until_failure(ncclshim_comm *comm, int busy_after, int64_t *wait_ms) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(ncclshim_comm_library(comm));
  for (int i = 0;; i++) {
    if (i == busy_after) fake_cuda_query(NOT_READY);
    ncclResult_t r =
        t->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), NULL);
    ncclshim_status status = ncclshim_comm_check(comm, r, "ncclAllReduce", DEADLINE_MS);
    if (status != NCCLSHIM_OK) return status;
    int64_t start = now_ms();
    status = ncclshim_comm_wait_stream(comm, NULL, NULL, DEADLINE_MS);
    *wait_ms = now_ms() - start;
    if (status != NCCLSHIM_OK) return status;
    assert_true(i < busy_after); /* a busy stream never reads as idle */
  }
}

/* Abort within its deadline (the fake's abort takes delay_ms); then every teardown call is a
 * harmless no-op and nothing can be waited on. */
static void abort_within_deadline(ncclshim_comm *comm, int delay_ms) {
  fake_abort_delay(delay_ms);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_abort(comm, delay_ms + (int)test_slack_ms(9 * delay_ms)),
                   NCCLSHIM_OK);
  int64_t took = now_ms() - start;
  assert_true(took >= delay_ms && took < delay_ms + test_slack_ms(4 * delay_ms)); /* not all */
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
  assert_int_equal(ncclshim_comm_destroy(comm, 100), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(comm, 100), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, 100), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("the communicator is aborted");
  assert_int_equal(fake_count("ncclCommAbort"), 1);
  assert_int_equal(fake_count("ncclCommFinalize") + fake_count("ncclCommDestroy"), 0);
  assert_null(ncclshim_comm_raw(comm));
}

/* abort_within_deadline, then the communicator and its handle released. */
static void abort_and_release(ncclshim_comm *comm, int delay_ms) {
  ncclshim_nccl *nccl = ncclshim_comm_library(comm);
  abort_within_deadline(comm, delay_ms);
  ncclshim_comm_free(comm);
  ncclshim_nccl_close(nccl);
}

/* Sockets: the peer's death reaches ncclCommGetAsyncError after a few polls. */
static void test_peer_lost_reported(void **state) {
  (void)state;
  for (int blocking = 0; blocking <= 1; blocking++) {
    ncclshim_comm *comm = ready_comm(blocking);
    fake_peer_lost(40, ncclRemoteError);
    fake_last_error("socket closed by peer 1");
    int64_t waited = -1;
    assert_int_equal(loop_until_failure(comm, 3, &waited), NCCLSHIM_NCCL_ERROR);
    assert_true(waited >= 0 && waited < DEADLINE_MS); /* reported, not timed out */
    assert_message(
        "ncclshim_comm_wait_stream: communicator rank 0 of 2 (ready, now failed), "
        "waiting for the stream's work: the communicator (asynchronous error) failed: "
        "ncclRemoteError (6)");
    assert_message("NCCL's last error: socket closed by peer 1");
    assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
    assert_null(ncclshim_comm_raw(comm));
    assert_int_equal(ncclshim_comm_destroy(comm, 100), NCCLSHIM_NCCL_ERROR);
    assert_message("only ncclshim_comm_abort can release it");
    abort_and_release(comm, 50);
  }
}

/* After the loss NCCL may refuse the next collective outright: the message still names the
 * communicator and the call. */
static void test_enqueue_refused_after_loss(void **state) {
  (void)state;
  ncclshim_comm *comm = ready_comm(1);
  fake_inject("ncclAllReduce", ncclRemoteError, 1);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(ncclshim_comm_library(comm));
  ncclResult_t r =
      t->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), NULL);
  assert_int_equal(ncclshim_comm_check(comm, r, "ncclAllReduce", DEADLINE_MS), NCCLSHIM_NCCL_ERROR);
  assert_message(
      "communicator rank 0 of 2 (ready), waiting for ncclAllReduce: ncclAllReduce "
      "failed: ncclRemoteError (6)");
  abort_and_release(comm, 50);
}

/* NVLink: nothing is ever reported; the deadline is the only detector. After the abort the
 * stream may stay busy (the fake's does): the wrapper refuses to wait on it, nothing hangs. */
static void test_peer_lost_silently(void **state) {
  (void)state;
  for (int blocking = 0; blocking <= 1; blocking++) {
    ncclshim_comm *comm = ready_comm(blocking);
    fake_peer_lost(0, ncclSuccess);
    int64_t waited = -1;
    assert_int_equal(loop_until_failure(comm, 5, &waited), NCCLSHIM_TIMEOUT);
    assert_true(waited >= DEADLINE_MS && waited <= late_ms());
    assert_message(
        "ncclshim_comm_wait_stream: communicator rank 0 of 2 (ready), waiting for "
        "the stream's work: still running after 300 ms and the communicator reports "
        "no error");
    assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
    abort_and_release(comm, 100);
  }
}

/* The init wait (DEADLINE_MS) on a communicator whose init answers ncclInProgress `polls`
 * times (< 0: forever), then `result`: it must answer `status`; how long it took. */
static int64_t init_wait(ncclshim_comm *comm, int polls, ncclResult_t result,
                         ncclshim_status status) {
  fake_async(polls, result);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_wait(comm, DEADLINE_MS), status);
  return now_ms() - start;
}

/* A peer lost during a non-blocking init: the init wait reports it and names the init. */
static void test_peer_lost_during_init(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_true(init_wait(comm, 5, ncclSystemError, NCCLSHIM_NCCL_ERROR) < DEADLINE_MS);
  assert_message(
      "communicator rank 0 of 2 (initializing, now failed), waiting for its init: "
      "the communicator (asynchronous error) failed: ncclSystemError (2)");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  abort_within_deadline(comm, 50);
}

/* An init that never completes (the peer died before it connected, and NCCL keeps trying):
 * TIMEOUT at its deadline, still INITIALIZING, and a slow abort ends it. */
static void test_init_never_completes(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int64_t waited = init_wait(comm, -1, ncclSuccess, NCCLSHIM_TIMEOUT);
  assert_true(waited >= DEADLINE_MS && waited <= late_ms());
  assert_message(
      "communicator rank 0 of 2 (initializing), waiting for its init: the "
      "communicator is still in progress after 300 ms");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_INITIALIZING);
  /* destroy waits for the init first, within its own deadline */
  assert_int_equal(ncclshim_comm_destroy(comm, 50), NCCLSHIM_TIMEOUT);
  assert_int_equal(fake_count("ncclCommFinalize"), 0);
  abort_within_deadline(comm, 200);
}

/* After both ranks registered a symmetric window: the buffer cannot be freed while the
 * communicator is FAILED (NCCL may still use it); after the abort only the memory is freed. */
static void test_peer_lost_with_window(void **state) {
  (void)state;
  for (int blocking = 0; blocking <= 1; blocking++) {
    ncclshim_comm *comm = ready_comm(blocking);
    ncclshim_symmem *mem = NULL;
    assert_int_equal(ncclshim_symmem_alloc(comm, 1 << 16, NULL, 1000, &mem), NCCLSHIM_OK);
    assert_int_equal(fake_windows(), 1);
    fake_peer_lost(10, ncclRemoteError);
    int64_t waited = -1;
    assert_int_equal(loop_until_failure(comm, 2, &waited), NCCLSHIM_NCCL_ERROR);
    assert_int_equal(ncclshim_symmem_free(mem, 100), NCCLSHIM_INVALID_ARGUMENT);
    assert_message("the communicator is failed, so the window cannot be deregistered");
    assert_int_equal(fake_allocations(), 1);
    abort_within_deadline(comm, 50);
    ncclshim_nccl *nccl = ncclshim_comm_library(comm);
    ncclshim_comm_free(comm); /* the buffer keeps it alive */
    assert_int_equal(ncclshim_symmem_free(mem, 100), NCCLSHIM_OK);
    assert_int_equal(fake_allocations(), 0);
    assert_int_equal(fake_count("ncclCommWindowDeregister"), 0);
    ncclshim_nccl_close(nccl);
  }
}

/* An abort slower than its deadline: TIMEOUT at its deadline, the wrapper may be freed at once,
 * and NCCL's abort still returns on its thread later. */
static void test_abort_slower_than_deadline(void **state) {
  (void)state;
  ncclshim_comm *comm = ready_comm(0);
  ncclshim_nccl *nccl = ncclshim_comm_library(comm);
  fake_abort_delay(2 * DEADLINE_MS);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_abort(comm, DEADLINE_MS), NCCLSHIM_TIMEOUT);
  int64_t took = now_ms() - start;
  assert_true(took >= DEADLINE_MS && took <= late_ms());
  assert_message("abort timed out after 300 ms: ncclCommAbort (rank 0 of 2) has not returned");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTING);
  ncclshim_comm_free(comm);
  assert_int_equal(fake_abort_returns(), 0);
  assert_int_equal(fake_wait_abort_returns(1, (int)late_ms()), 1);
  ncclshim_nccl_close(nccl);
}

/* The watched communicator's operations not yet known complete. */
static uint64_t outstanding(ncclshim_comm *comm) {
  ncclshim_watch_counts counts = NCCLSHIM_WATCH_COUNTS_INIT;
  assert_int_equal(ncclshim_comm_watch_counts(comm, &counts), NCCLSHIM_OK);
  return counts.outstanding;
}

/* The watchdog's rank 0: all-reduces recorded and waited for as a blocking program waits
 * (until the stream is idle or the communicator failed); after `busy_after` of them the
 * work never completes, and once that one is recorded NCCL reports `loss` (ncclSuccess:
 * nothing; armed only then, so that the watchdog cannot see it before the operation exists).
 * Returns the failure and how long after its record it came. */
static ncclshim_status watched_until_failure(ncclshim_comm *comm, int busy_after, ncclResult_t loss,
                                             int64_t *detect_ms) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(ncclshim_comm_library(comm));
  for (int i = 0;; i++) {
    /* The watchdog retires the finished ones first (their events fire when it queries
     * them), and only then may every event read as never firing. */
    if (i == busy_after) {
      WAIT_FOR(outstanding(comm) == 0, 10 * DEADLINE_MS);
      assert_int_equal(outstanding(comm), 0);
      fake_cuda_event_query(NOT_READY);
    }
    ncclResult_t r =
        t->ncclAllReduce(NULL, NULL, 1 << 20, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), NULL);
    ncclshim_status status = ncclshim_comm_check(comm, r, "ncclAllReduce", 0);
    int64_t start = now_ms();
    if (status == NCCLSHIM_OK)
      status = ncclshim_comm_record(comm, NULL, "ncclAllReduce", 1 << 20, ncclFloat32);
    if (status != NCCLSHIM_OK) return status;
    if (i == busy_after && loss != ncclSuccess) {
      /* Armed once a look began after the record (the second look from now): a look begun
       * before it, which knew no operation, could otherwise meet the loss. */
      int looks = watchdog_looks();
      WAIT_FOR(watchdog_looks() - looks >= 2, 10 * DEADLINE_MS);
      assert_true(watchdog_looks() - looks >= 2);
      fake_peer_lost(0, loss);
    }
    while (i >= busy_after && ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY &&
           now_ms() - start < late_ms()) {
      struct timespec us = {0, 100000};
      nanosleep(&us, NULL);
    }
    *detect_ms = now_ms() - start;
    if (i >= busy_after) return ncclshim_comm_check(comm, ncclSuccess, "ncclAllReduce", 0);
  }
}

/* The watchdog already started the abort: the user's abort waits for that one (child and
 * parent: two ncclCommAbort), then teardown is a no-op. */
static void watchdog_aborted(ncclshim_comm *comm) {
  /* Destroy refuses a FAILED communicator with NCCL_ERROR, whatever the watchdog's status:
   * its TIMEOUT would mean "FINALIZING, call again". */
  assert_int_equal(ncclshim_comm_destroy(comm, 100), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclshim_comm_destroy: the watchdog failed communicator rank 0 of 2");
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  /* After the abort, no message sends the caller back to abort. */
  assert_int_not_equal(ncclshim_comm_record(comm, NULL, "ncclAllReduce", 1, ncclFloat32),
                       NCCLSHIM_OK);
  assert_message("it has been aborted: ncclshim_comm_free releases the wrapper");
  assert_null(strstr(ncclshim_last_error(), "only ncclshim_comm_abort"));
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
  assert_int_equal(ncclshim_comm_destroy(comm, 100), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommAbort"), 2);
  assert_int_equal(fake_count("ncclCommFinalize") + fake_count("ncclCommDestroy"), 0);
}

/* The watchdog's cases' setup: a NCCLSHIM_COMM_SPLIT_BLOCKING communicator, READY and
 * watched (DEADLINE_MS); their teardown makes events fire again. */
static int watched_split(void **state) {
  open_fixture(state, "2.28.9", NCCLSHIM_COMM_SPLIT_BLOCKING);
  comm_fixture *f = *state;
  assert_int_equal(ncclshim_comm_wait(f->comm, 1000), NCCLSHIM_OK);
  ncclshim_watchdog_options wo = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  wo.interval_ms = 5;
  assert_int_equal(ncclshim_watchdog_start(&wo, &f->dog), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_watch(f->comm, f->dog, DEADLINE_MS), NCCLSHIM_OK);
  return 0;
}

static int release_watched(void **state) {
  fake_cuda_event_query(0);
  return release_fixture(state);
}

static void test_watchdog_peer_lost_silently(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int64_t detected = -1;
  assert_int_equal(watched_until_failure(comm, 5, ncclSuccess, &detected), NCCLSHIM_TIMEOUT);
  /* Never before the deadline; found at all. How soon after it (within +10 % on the GPU
   * host) is a benchmark's figure (bench/gpu/percall.sh, detect), not a unit test's: under
   * valgrind the watchdog's thread waits its turn. */
  assert_true(detected >= DEADLINE_MS && detected <= late_ms());
  assert_message(
      "the watchdog failed communicator rank 0 of 2: ncclAllReduce #6 "
      "(count 1048576, ncclFloat32)");
  assert_message("past its deadline of 300 ms; the watchdog started ncclCommAbort");
  watchdog_aborted(comm);
}

static void test_watchdog_peer_lost_reported(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int64_t detected = -1;
  assert_int_equal(watched_until_failure(comm, 0, ncclRemoteError, &detected), NCCLSHIM_NCCL_ERROR);
  assert_true(detected < DEADLINE_MS);
  assert_message("ncclCommGetAsyncError reported ncclRemoteError (6) during ncclAllReduce #1");
  watchdog_aborted(comm);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peer_lost_reported),
      cmocka_unit_test(test_peer_lost_silently),
      cmocka_unit_test(test_enqueue_refused_after_loss),
      cmocka_unit_test_setup_teardown(test_peer_lost_during_init, nonblocking_2289,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_init_never_completes, nonblocking_2289, release_fixture),
      cmocka_unit_test(test_peer_lost_with_window),
      cmocka_unit_test(test_abort_slower_than_deadline),
      cmocka_unit_test_setup_teardown(test_watchdog_peer_lost_silently, watched_split,
                                      release_watched),
      cmocka_unit_test_setup_teardown(test_watchdog_peer_lost_reported, watched_split,
                                      release_watched),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
