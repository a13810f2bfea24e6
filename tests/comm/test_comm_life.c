/* Communicators through their life: blocking and non-blocking init, waits, collectives and
 * group ends on non-blocking communicators, destroy, and an abort that may hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm_fixture.h"

static void test_blocking_init(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_non_null(ncclshim_comm_raw(comm));
  assert_ptr_equal(ncclshim_comm_library(comm), nccl);
  assert_int_equal(ncclshim_comm_rank(comm), 0);
  assert_int_equal(ncclshim_comm_size(comm), 2);
  assert_int_equal(fake_count("ncclCommInitRankConfig"), 1);
  assert_int_equal(fake_count("ncclCommInitRank"), 0);
}

/* blocking = 0 reaches NCCL through the config: the fake answers ncclInProgress then. */
static void test_nonblocking_init_then_wait(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_async(3, ncclSuccess);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_INITIALIZING);
  assert_null(ncclshim_comm_raw(comm));
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_non_null(ncclshim_comm_raw(comm));
  assert_int_equal(fake_count("ncclCommGetAsyncError"), 4);
}

/* A rank that never joins: the wait times out within 10 %, the abort releases it, and every
 * later teardown call is a harmless no-op. */
static void test_peer_never_joins(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_async(-1, ncclSuccess);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_wait(comm, 300), NCCLSHIM_TIMEOUT);
  int64_t elapsed = now_ms() - start;
  assert_true(elapsed >= 300 && elapsed <= 300 + test_slack_ms(30));
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_INITIALIZING);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
  assert_int_equal(fake_count("ncclCommFinalize") + fake_count("ncclCommDestroy"), 0);
  assert_int_equal(ncclshim_comm_wait(comm, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("the communicator is aborted");
  assert_null(ncclshim_comm_raw(comm));
}

/* An asynchronous error makes it FAILED: destroy refuses, abort releases it. */
static void test_async_error(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_async(2, ncclSystemError);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_NCCL_ERROR);
  assert_message("asynchronous error) failed: ncclSystemError (2)");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  assert_int_equal(ncclshim_comm_wait(comm, 10), NCCLSHIM_NCCL_ERROR);
  assert_message("failed earlier with ncclSystemError (2)");
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_NCCL_ERROR);
  assert_message("only ncclshim_comm_abort can release it");
  assert_int_equal(fake_count("ncclCommFinalize") + fake_count("ncclCommDestroy"), 0);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
}

/* A failed init writes nothing into *out, nor does one that gives no communicator. */
static void test_init_failures_leave_out_alone(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclshim_comm *const poison = (ncclshim_comm *)&id;
  ncclshim_comm *comm = poison;
  fake_inject("ncclCommInitRankConfig", ncclInvalidArgument, 1);
  fake_last_error("Invalid rank requested : 0/2");
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, NULL, &comm), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclCommInitRankConfig failed: ncclInvalidArgument (4)");
  assert_message("Invalid rank requested");
  assert_ptr_equal(comm, poison);
  fake_live(0); /* the plain fake succeeds without writing a communicator */
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, NULL, &comm), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclCommInitRankConfig returned ncclSuccess but no communicator");
  assert_ptr_equal(comm, poison);
}

static void test_init_argument_checks(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclshim_comm *comm = NULL;
  ncclshim_comm_options small = {0, 1};
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, NULL, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_init(nccl, 2, NULL, 0, NULL, &comm), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_init(nccl, 0, &id, 0, NULL, &comm), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 2, NULL, &comm), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("rank is outside [0, nranks) (rank 2 of 2)");
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, -1, NULL, &comm), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, &small, &comm), NCCLSHIM_INVALID_ARGUMENT);
  assert_null(comm);
  assert_int_equal(fake_count("ncclCommInitRankConfig"), 0);
}

/* Without ncclCommInitRankConfig: non-blocking is refused with both versions named, and a
 * blocking communicator comes from ncclCommInitRank. */
static int on_no_config(void **state) { return open_fixture(state, "no-config", -1); }

static void test_without_config_init(void **state) {
  comm_fixture *f = *state;
  ncclshim_nccl *nccl = f->nccl;
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = 0;
  ncclshim_comm *comm = NULL;
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, &options, &comm), NCCLSHIM_UNAVAILABLE);
  assert_message("needs NCCL >= 2.14.0 (nonblocking-init); the loaded NCCL is 2.28.9");
  assert_null(comm);
  comm = f->comm = fake_comm(nccl, 1);
  assert_int_equal(fake_count("ncclCommInitRank"), 1);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
}

static void test_without_nccl(void **state) {
  (void)state;
  ncclshim_nccl *nccl = open_absent();
  ncclshim_status status = ncclshim_nccl_status(nccl);
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclshim_comm *comm = NULL;
  assert_int_equal(ncclshim_comm_init(nccl, 1, &id, 0, NULL, &comm), status);
  assert_message("ncclshim_comm_init: no NCCL is loaded");
  assert_null(comm);
  ncclshim_nccl_close(nccl);
}

/* Destroy finalizes first, then destroys, once; later calls make no NCCL call. */
static void test_destroy_blocking(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_DESTROYED);
  assert_int_equal(fake_count("ncclCommFinalize"), 1);
  assert_int_equal(fake_count("ncclCommDestroy"), 1);
  assert_true(fake_seq("ncclCommFinalize") < fake_seq("ncclCommDestroy"));
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommDestroy"), 1);
  assert_int_equal(fake_count("ncclCommAbort"), 0);
  assert_int_equal(ncclshim_comm_destroy(NULL, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(NULL, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(NULL), NCCLSHIM_COMM_DESTROYED);
  ncclshim_comm_free(NULL);
}

/* Non-blocking: finalize answers ncclInProgress; a slow finalize times out (FINALIZING), and
 * the next destroy goes on waiting without finalizing twice. */
static void test_destroy_nonblocking(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  fake_async(-1, ncclSuccess);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_destroy(comm, 200), NCCLSHIM_TIMEOUT);
  assert_true(now_ms() - start <= 200 + test_slack_ms(20));
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FINALIZING);
  assert_int_equal(fake_count("ncclCommDestroy"), 0);
  fake_async(2, ncclSuccess);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommFinalize"), 1);
  assert_int_equal(fake_count("ncclCommDestroy"), 1);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_DESTROYED);
}

/* Destroy of a communicator still initializing waits for it first, within the deadline. */
static void test_destroy_waits_for_init(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_async(3, ncclSuccess);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommDestroy"), 1);
}

/* A step of the teardown that fails (the cases test_destroy_step_fails and
 * test_abort_returns_error): a failed finalize leaves the communicator FAILED; an abort that
 * fails is still the end, ABORTED, and a second abort is a no-op. */
static const step_failure finalize_fails = {
    ncclshim_comm_destroy, "ncclCommFinalize", ncclInternalError,
    "ncclCommFinalize failed: ncclInternalError (3)", NCCLSHIM_COMM_FAILED};
static const step_failure abort_fails = {
    ncclshim_comm_abort, "ncclCommAbort", ncclUnhandledCudaError,
    "ncclCommAbort failed: ncclUnhandledCudaError (1)", NCCLSHIM_COMM_ABORTED};

static void test_step_fails(void **state) {
  comm_fixture *f = *state;
  assert_step_fails(f->comm, f->params);
}

/* ncclCommAbort hangs: "abort timed out" within 10 %, the thread is not started twice, and
 * once NCCL's abort returns a later call sees it. */
static void test_abort_hangs(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_abort_hang(1);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_abort(comm, 300), NCCLSHIM_TIMEOUT);
  int64_t elapsed = now_ms() - start;
  assert_true(elapsed >= 300 && elapsed <= 300 + test_slack_ms(30));
  assert_message("abort timed out after 300 ms");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTING);
  assert_int_equal(ncclshim_comm_destroy(comm, 100), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_wait(comm, 100), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_abort(comm, 50), NCCLSHIM_TIMEOUT);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
  assert_int_equal(fake_abort_returns(), 0);
  fake_abort_hang(0);
  assert_int_equal(ncclshim_comm_abort(comm, 2000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_ABORTED);
  assert_int_equal(fake_abort_returns(), 1);
  assert_int_equal(fake_count("ncclCommAbort"), 1);
}

/* The wrapper freed while the abort still runs: the thread keeps it alive until it returns. */
static void test_free_during_abort(void **state) {
  comm_fixture *f = *state;
  fake_abort_hang(1);
  assert_int_equal(ncclshim_comm_abort(f->comm, 20), NCCLSHIM_TIMEOUT);
  ncclshim_comm_free(f->comm);
  f->comm = NULL;
  fake_abort_hang(0);
  assert_int_equal(fake_wait_abort_returns(1, (int)test_slack_ms(2000)), 1);
}

static void test_negative_timeouts(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  assert_int_equal(ncclshim_comm_wait(comm, -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_check(comm, ncclInProgress, "x", -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_destroy(comm, -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_abort(comm, -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_group_end(nccl, &comm, 1, -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_int_equal(ncclshim_comm_wait(NULL, 10), NCCLSHIM_INVALID_ARGUMENT);
}

/* A collective's result: success at once, in progress finished by the bounded wait, an error
 * reported with its name and the communicator left usable. */
static void test_check_collective(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  ncclComm_t raw = ncclshim_comm_raw(comm);
  ncclResult_t r = t->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, raw, NULL);
  assert_int_equal(ncclshim_comm_check(comm, r, "ncclAllReduce", 1000), NCCLSHIM_OK);
  fake_inject("ncclAllReduce", ncclInProgress, 1);
  fake_async(4, ncclSuccess);
  r = t->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, raw, NULL);
  int polls = fake_count("ncclCommGetAsyncError");
  assert_int_equal(ncclshim_comm_check(comm, r, "ncclAllReduce", 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommGetAsyncError") - polls, 5);
  fake_inject("ncclAllReduce", ncclInvalidArgument, 1);
  r = t->ncclAllReduce(NULL, NULL, 0, (ncclDataType_t)99, ncclSum, raw, NULL);
  assert_int_equal(ncclshim_comm_check(comm, r, "ncclAllReduce", 1000), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclAllReduce failed: ncclInvalidArgument (4)");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  fake_async(-1, ncclSuccess);
  assert_int_equal(ncclshim_comm_check(comm, ncclInProgress, "ncclBroadcast", 50),
                   NCCLSHIM_TIMEOUT);
}

/* Group end on non-blocking communicators waits on each, under one deadline. */
static void test_group_end(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  ncclshim_comm *comms[2] = {fake_comm(nccl, 0), fake_comm(nccl, 0)};
  assert_int_equal(ncclshim_comm_wait(comms[0], 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_wait(comms[1], 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_group_end(nccl, comms, 2, 1000), NCCLSHIM_OK); /* success */
  fake_inject("ncclGroupEnd", ncclInProgress, 1);
  fake_async(3, ncclSuccess);
  int polls = fake_count("ncclCommGetAsyncError");
  assert_int_equal(ncclshim_comm_group_end(nccl, comms, 2, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommGetAsyncError") - polls, 5);
  fake_inject("ncclGroupEnd", ncclInProgress, 1);
  fake_async(-1, ncclSuccess);
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_group_end(nccl, comms, 2, 200), NCCLSHIM_TIMEOUT);
  assert_true(now_ms() - start <= 200 + test_slack_ms(20));
  fake_inject("ncclGroupEnd", ncclInvalidUsage, 1);
  assert_int_equal(ncclshim_comm_group_end(nccl, comms, 2, 100), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclGroupEnd failed: ncclInvalidUsage (5)");
  fake_inject("ncclGroupEnd", ncclInProgress, 1);
  fake_async(1, ncclRemoteError);
  assert_int_equal(ncclshim_comm_group_end(nccl, comms, 2, 1000), NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_comm_state_of(comms[0]), NCCLSHIM_COMM_FAILED);
  assert_int_equal(ncclshim_comm_group_end(nccl, NULL, 1, 100), NCCLSHIM_INVALID_ARGUMENT);
  /* A NULL entry is refused before ncclGroupEnd runs, whatever NCCL would answer. */
  ncclshim_comm *with_null[2] = {comms[1], NULL};
  int ends = fake_count("ncclGroupEnd");
  assert_int_equal(ncclshim_comm_group_end(nccl, with_null, 2, 100), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("comms[1] is NULL");
  assert_int_equal(fake_count("ncclGroupEnd"), ends);
  ncclshim_comm_free(comms[0]);
  ncclshim_comm_free(comms[1]);
}

/* Waiting for a stream: idle is OK; busy with an error on the communicator is that error (a
 * dead peer shows up instead of a hang); busy without one is a TIMEOUT. */
static void test_wait_stream(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_query(0);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, 1000), NCCLSHIM_OK);
  fake_cuda_query(600); /* CUDA_ERROR_NOT_READY */
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, 200), NCCLSHIM_TIMEOUT);
  int64_t elapsed = now_ms() - start;
  assert_true(elapsed >= 200 && elapsed <= 200 + test_slack_ms(20));
  assert_message("still running after 200 ms");
  fake_async(2, ncclRemoteError);
  assert_int_equal(ncclshim_comm_wait_stream(comm, NULL, NULL, 1000), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclRemoteError (6)");
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  fake_cuda_query(700); /* CUDA_ERROR_ILLEGAL_ADDRESS */
  ncclshim_comm *other = fake_comm(fixture_nccl(state), 1);
  fake_async(0, ncclSuccess);
  assert_int_equal(ncclshim_comm_wait_stream(other, NULL, NULL, 1000), NCCLSHIM_CUDA_ERROR);
  assert_message("cuStreamQuery failed");
  assert_message("rank 0 of 2 (ready), waiting for the stream's work"); /* named too */
  fake_cuda_query(0);
  ncclshim_comm_free(other);
}

static void test_state_names(void **state) {
  (void)state;
  static const char *const names[] = {"initializing", "ready",    "finalizing", "failed",
                                      "destroyed",    "aborting", "aborted"};
  for (int i = 0; i < 7; i++)
    assert_string_equal(ncclshim_comm_state_name((ncclshim_comm_state)i), names[i]);
  assert_string_equal(ncclshim_comm_state_name((ncclshim_comm_state)7), "unknown");
  assert_string_equal(ncclshim_comm_state_name((ncclshim_comm_state)-1), "unknown");
}

/* NCCLSHIM_COMM_SPLIT_BLOCKING under NCCL_COMM_BLOCKING=0, which NCCL lets override the
 * child's blocking config: the child's finalize answers ncclInProgress, and destroy must wait
 * for it (bounded) and go on to destroy both communicators, not stop at an OK. */
static void test_destroy_split_made_nonblocking(void **state) {
  comm_fixture *f = *state;
  setenv("NCCL_COMM_BLOCKING", "0", 1);
  ncclshim_comm *comm = f->comm = fake_comm(f->nccl, NCCLSHIM_COMM_SPLIT_BLOCKING);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  fake_async(-1, ncclSuccess); /* the child's finalize never finishes: TIMEOUT, FINALIZING */
  assert_int_equal(ncclshim_comm_destroy(comm, 20), NCCLSHIM_TIMEOUT);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FINALIZING);
  assert_int_equal(fake_count("ncclCommDestroy"), 0);
  fake_async(2, ncclSuccess); /* now it finishes: the parent follows */
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_DESTROYED);
  assert_int_equal(fake_count("ncclCommFinalize"), 2); /* once each, never again */
  assert_int_equal(fake_count("ncclCommDestroy"), 2);
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommFinalize"), 2);
  unsetenv("NCCL_COMM_BLOCKING");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_blocking_init, blocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_nonblocking_init_then_wait, nonblocking_2289,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_peer_never_joins, nonblocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_async_error, nonblocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_init_failures_leave_out_alone, on_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_init_argument_checks, on_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_without_config_init, on_no_config, release_fixture),
      cmocka_unit_test(test_without_nccl),
      cmocka_unit_test_setup_teardown(test_destroy_blocking, blocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_destroy_nonblocking, nonblocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_destroy_waits_for_init, nonblocking_2289,
                                      release_fixture),
      {"test_destroy_step_fails", test_step_fails, blocking_2289, release_fixture,
       (void *)&finalize_fails},
      cmocka_unit_test_setup_teardown(test_destroy_split_made_nonblocking, on_2289,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_abort_hangs, blocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_free_during_abort, blocking_2289, release_fixture),
      {"test_abort_returns_error", test_step_fails, blocking_2289, release_fixture,
       (void *)&abort_fails},
      cmocka_unit_test_setup_teardown(test_negative_timeouts, blocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_check_collective, nonblocking_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_group_end, on_2289, release_fixture),
      cmocka_unit_test_setup_teardown(test_wait_stream, blocking_2289, release_fixture),
      cmocka_unit_test(test_state_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
