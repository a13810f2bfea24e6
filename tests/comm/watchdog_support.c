/* What the watchdog's tests share: watchdog_support.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "watchdog_support.h"

atomic_int callbacks;
char callback_message[1024];
ncclshim_status callback_status;
ncclshim_comm_state callback_state;
void *callback_user;
void (*callback_action)(ncclshim_comm *comm);

static void on_failure(ncclshim_comm *comm, ncclshim_status status, const char *message,
                       void *user) {
  if (callback_action != NULL) callback_action(comm);
  callback_user = user;
  callback_state = ncclshim_comm_state_of(comm);
  callback_status = status;
  strncpy(callback_message, message, sizeof(callback_message) - 1);
  atomic_fetch_add(&callbacks, 1); /* publishes the fields above */
}

ncclshim_watchdog *start_every(int interval_ms) {
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  options.interval_ms = interval_ms;
  options.on_failure = on_failure;
  options.user = &callbacks;
  ncclshim_watchdog *dog = NULL;
  assert_int_equal(ncclshim_watchdog_start(&options, &dog), NCCLSHIM_OK);
  return dog;
}

ncclshim_watchdog *start(void) { return start_every(INTERVAL_MS); }

static CUstream streams[TEST_STREAMS];

CUstream test_stream(int i) {
  if (streams[i] == NULL) streams[i] = cuda_fake()->new_stream(0);
  assert_non_null(streams[i]);
  return streams[i];
}

int setup(void **state) {
  (void)state;
  fake_cuda_fresh();
  fake_cuda_capture(0, 0);
  memset(streams, 0, sizeof(streams));
  atomic_store(&callbacks, 0);
  callback_action = NULL;
  callback_message[0] = '\0';
  callback_state = NCCLSHIM_COMM_READY;
  callback_user = NULL;
  return 0;
}

static int watched_fixture(void **state, int timeout_ms) {
  setup(state);
  open_fixture(state, "2.28.9", 1);
  comm_fixture *f = *state;
  f->dog = start();
  assert_int_equal(ncclshim_comm_watch(f->comm, f->dog, timeout_ms), NCCLSHIM_OK);
  return 0;
}
int watched_2289(void **state) { return watched_fixture(state, TIMEOUT_MS); }

ncclshim_comm *watched_for(ncclshim_nccl **nccl, ncclshim_watchdog *dog, int timeout_ms) {
  *nccl = fake_open("2.28.9");
  ncclshim_comm *comm = fake_comm(*nccl, 1);
  assert_int_equal(ncclshim_comm_watch(comm, dog, timeout_ms), NCCLSHIM_OK);
  return comm;
}

ncclshim_comm *watched(ncclshim_nccl **nccl, ncclshim_watchdog *dog) {
  return watched_for(nccl, dog, TIMEOUT_MS);
}

ncclshim_status all_reduce_on(ncclshim_comm *comm, CUstream stream, size_t count) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(ncclshim_comm_library(comm));
  ncclResult_t r =
      t->ncclAllReduce(NULL, NULL, count, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), stream);
  ncclshim_status status = ncclshim_comm_check(comm, r, "ncclAllReduce", 0);
  if (status != NCCLSHIM_OK) return status;
  return ncclshim_comm_record(comm, stream, "ncclAllReduce", count, ncclFloat32);
}

ncclshim_status all_reduce(ncclshim_comm *comm, size_t count) {
  return all_reduce_on(comm, NULL, count);
}

void wait_for_failure(ncclshim_comm *comm, int limit_ms) {
  WAIT_FOR(ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY, limit_ms);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  WAIT_FOR(atomic_load(&callbacks) > 0, limit_ms);
  if (atomic_load(&callbacks) > 0) { /* called with the options' user, once the failure shows */
    assert_ptr_equal(callback_user, &callbacks);
    assert_int_equal(callback_state, NCCLSHIM_COMM_FAILED);
  }
}

ncclshim_watch_counts counts_of(ncclshim_comm *comm) {
  ncclshim_watch_counts counts = NCCLSHIM_WATCH_COUNTS_INIT;
  assert_int_equal(ncclshim_comm_watch_counts(comm, &counts), NCCLSHIM_OK);
  return counts;
}

void wait_until_done(ncclshim_comm *comm, int limit_ms) {
  WAIT_FOR(counts_of(comm).outstanding == 0, limit_ms);
  assert_int_equal(counts_of(comm).outstanding, 0);
}

/* A look judges after its question (watchdog_looks), and a communicator it fails is looked
 * at no more: once three more looks came, the second began after the `ms`, and the third
 * shows that the second judged it healthy. */
static int looked_since(ncclshim_comm *comm, int looks) {
  return watchdog_looks() - looks >= 3 || ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY;
}

void outlast(ncclshim_comm *comm, int ms) {
  sleep_ms(ms);
  int looks = watchdog_looks();
  WAIT_FOR(looked_since(comm, looks), 20 * TIMEOUT_MS);
  assert_true(looked_since(comm, looks));
}

void finish_healthy(ncclshim_comm *comm) {
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
}
void finish_failed(ncclshim_comm *comm) {
  assert_int_equal(ncclshim_comm_abort(comm, 5000), NCCLSHIM_OK);
}

/* The fake driver's controls, as the cases name them. */
void fake_set_capture(CUstream stream, int status, int mode) {
  cuda_fake()->set_capture(stream, status, mode);
}
void fake_capture_on_record(CUstream stream) { cuda_fake()->capture_on_record(stream); }
void fake_captured_answer(int result) { cuda_fake()->set_captured_answer(result); }
int fake_counter(int which) { return cuda_fake()->counter(which); }
void fake_stream_answer(CUstream stream, int answer) {
  cuda_fake()->set_stream_answer(stream, answer, 0);
}
void fake_end_captures(void) { cuda_fake()->end_captures(); }
void fake_complete_all(void) { cuda_fake()->complete_all(); }
void fake_block_next_record(CUstream stream) { cuda_fake()->block_next_record(stream); }
int fake_blocked(void) { return cuda_fake()->blocked(); }
void fake_release_record(void) { cuda_fake()->release_record(); }
