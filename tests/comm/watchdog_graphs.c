/* The watchdog and CUDA graphs, on the capture fake (part of test_comm_watchdog):
 *  - a global-mode capture begun while recorded work is pending: the watchdog's queries
 *    (thread-local mode) invalidate nothing, and nothing fails however long it lasts;
 *  - records on a capturing stream (or on the legacy stream during a global capture)
 *    record no event, start no clock, count as captured;
 *  - a capture that begins between a record's check and its cuEventRecord: the event's
 *    capture answer (907, or INVALID_VALUE) fails nothing, and counts it as captured;
 *  - graph replays: a hang names the graph and its collectives; replays long after the
 *    capture fail nothing; labels are copied and cut;
 *  - every operation's event is recorded inside its record: the last operations of a
 *    burst are watched with no later event, and nothing is ever recorded into a stream that
 *    began capturing after its records. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "watchdog_support.h"

#define S test_stream(0)
#define OTHER test_stream(1)
enum { ACTIVE = 1, GLOBAL = 0, THREAD_LOCAL = 1, CAPTURED_EVENT = 907, INVALID_VALUE = 1 };

/* Nothing failed: READY, no callback, no abort. */
static void assert_healthy(ncclshim_comm *comm) {
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
  assert_int_equal(atomic_load(&callbacks), 0);
  assert_string_equal(ncclshim_comm_failure(comm), "");
  assert_int_equal(fake_count("ncclCommAbort"), 0);
}

/* The case's end: nothing failed, and the communicator destroys. */
static void end_healthy(ncclshim_comm *comm) {
  assert_healthy(comm);
  finish_healthy(comm);
}

void test_capture_global_pending(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int invalidated = fake_counter(INVALIDATED_CAPTURES);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  fake_cuda_event_query(NOT_READY); /* pending work, recorded */
  assert_int_equal(all_reduce_on(comm, S, 64), NCCLSHIM_OK);
  assert_int_equal(all_reduce_on(comm, S, 64), NCCLSHIM_OK);
  fake_set_capture(S, ACTIVE, GLOBAL);
  assert_int_equal(all_reduce_on(comm, S, 64), NCCLSHIM_OK); /* in the capture */
  int queried = fake_cuda_events(QUERIED);
  fake_complete_all(); /* the pending work finishes during the capture */
  outlast(comm, 3 * TIMEOUT_MS);
  assert_true(fake_cuda_events(QUERIED) > queried); /* the watchdog did look */
  assert_int_equal(fake_counter(INVALIDATED_CAPTURES), invalidated);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into);
  assert_healthy(comm);
  fake_set_capture(S, 0, GLOBAL); /* the capture ends */
  fake_cuda_event_query(0);
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "pending", 1), NCCLSHIM_OK);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  end_healthy(comm);
}

void test_capture_records_nothing(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  fake_set_capture(S, ACTIVE, THREAD_LOCAL);
  fake_cuda_event_query(NOT_READY); /* an event recorded now would never fire */
  int recorded = fake_cuda_events(RECORDED);
  for (int i = 0; i < 3; i++) assert_int_equal(all_reduce_on(comm, S, 32), NCCLSHIM_OK);
  assert_int_equal(fake_cuda_events(RECORDED), recorded);
  ncclshim_watch_counts c = counts_of(comm);
  assert_int_equal(c.captured, 3);
  assert_int_equal(c.recorded, 0);
  assert_int_equal(c.outstanding, 0);
  outlast(comm, 3 * TIMEOUT_MS); /* no clock started: nothing to fail */
  assert_healthy(comm);
  /* The legacy stream while another stream captures in global mode counts as capturing
   * (the driver answers 906); a stream it cannot tell about fails the record. */
  fake_set_capture(OTHER, ACTIVE, GLOBAL);
  assert_int_equal(all_reduce(comm, 32), NCCLSHIM_OK);
  assert_int_equal(counts_of(comm).captured, 4);
  fake_set_capture(OTHER, 0, GLOBAL);
  fake_cuda_capture(400, 0);
  assert_int_equal(all_reduce_on(comm, OTHER, 32), NCCLSHIM_CUDA_ERROR);
  assert_message("cuStreamIsCapturing failed: CUDA_ERROR_INVALID_HANDLE (400): ncclAllReduce #");
  char expected[96];
  snprintf(expected, sizeof(expected), "on stream %p is not watched", (void *)OTHER);
  assert_message(expected);
  fake_cuda_capture(0, 0);
  /* A graph launched into a capture becomes a node of it: captured too. */
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "nested", 3), NCCLSHIM_OK);
  assert_int_equal(counts_of(comm).captured, 5);
  fake_set_capture(S, 0, THREAD_LOCAL);
  fake_cuda_event_query(0);
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "decode", 3), NCCLSHIM_OK);
  c = counts_of(comm);
  assert_int_equal(c.replays, 1);
  assert_int_equal(c.events, 1);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into);
  end_healthy(comm);
}

/* A capture begun between a record's check and its cuEventRecord takes the event: its
 * query answers `answer`; nothing fails, the operation counts as captured (its work is now
 * the graph's). */
static void capture_begun_during_a_record(ncclshim_comm *comm, int answer) {
  fake_captured_answer(answer);
  fake_capture_on_record(S);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  assert_int_equal(all_reduce_on(comm, S, 16), NCCLSHIM_OK);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into + 1);
  wait_until_done(comm, 20 * TIMEOUT_MS); /* the capture answer: not a hang */
  outlast(comm, 3 * TIMEOUT_MS);
  assert_healthy(comm);
  assert_int_equal(counts_of(comm).captured, 1);
  assert_int_equal(counts_of(comm).catch_ups, 0);
  fake_set_capture(S, 0, THREAD_LOCAL);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into + 1);
  end_healthy(comm);
}

void test_capture_begun_during_a_record(void **state) {
  capture_begun_during_a_record(fixture_comm(state), CAPTURED_EVENT);
  assert_int_equal(release_fixture(state), 0);
  watched_2289(state); /* a fresh fixture for the second answer */
  capture_begun_during_a_record(fixture_comm(state), INVALID_VALUE);
}

void test_replay_hang_names_the_graph(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "decode", -1), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("ops is -1");
  assert_int_equal(ncclshim_comm_record_graph(NULL, S, "decode", 1), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "decode", 2), NCCLSHIM_OK);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  fake_cuda_event_query(NOT_READY);
  char label[100];
  memset(label, 'g', sizeof(label) - 1);
  label[sizeof(label) - 1] = '\0';
  assert_int_equal(ncclshim_comm_record_graph(comm, S, label, 2), NCCLSHIM_OK);
  memset(label, 'x', sizeof(label) - 1); /* copied: the caller's buffer may change */
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(callback_status, NCCLSHIM_TIMEOUT);
  assert_non_null(strstr(callback_message, "replay #2 of CUDA graph \"gggg"));
  assert_non_null(strstr(callback_message, "ggg...\" (2 collectives), which had run"));
  assert_null(strstr(callback_message, "xxx"));
  assert_non_null(strstr(callback_message, "past its deadline of 100 ms"));
  assert_int_equal(ncclshim_comm_record_graph(comm, S, "decode", 2), NCCLSHIM_TIMEOUT);
  assert_message("replay #2 of CUDA graph");
  finish_failed(comm);
}

void test_replay_long_after_capture(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_set_capture(S, ACTIVE, THREAD_LOCAL);
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  fake_set_capture(S, 0, THREAD_LOCAL);
  outlast(comm, 3 * TIMEOUT_MS); /* launched long after the capture */
  for (int i = 0; i < 3; i++)
    assert_int_equal(ncclshim_comm_record_graph(comm, S, NULL, 2), NCCLSHIM_OK);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  assert_int_equal(counts_of(comm).replays, 3);
  end_healthy(comm);
}

/* A burst whose work stops after the first operation: each operation's record records an
 * event inside the call (those between two looks share one, recorded again; none is recorded
 * later: the stream may be gone by then), and the hang names the oldest not known complete. */
void test_burst_tail_watched(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int recorded = fake_cuda_events(RECORDED);
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #1 completes */
  wait_until_done(comm, 20 * TIMEOUT_MS); /* seen so: #2 is not under #1's event */
  fake_stream_answer(S, NOT_READY);       /* #2 .. #5 never do */
  for (int i = 0; i < 4; i++) assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  ncclshim_watch_counts c = counts_of(comm);
  assert_int_equal(c.recorded, 5);
  assert_int_equal(c.events, 5);
  assert_int_equal(fake_cuda_events(RECORDED) - recorded, 5);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  assert_int_equal(counts_of(comm).catch_ups, 0);
  assert_non_null(strstr(callback_message, "ncclAllReduce #2 (count 8, ncclFloat32)"));
  assert_null(strstr(callback_message, "#5"));
  finish_failed(comm);
}

/* Records made, then the stream captures in global mode while their work completes: the
 * watchdog records nothing into the capture (it records nothing at all) and its queries
 * invalidate nothing. */
void test_capture_after_the_records(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  int invalidated = fake_counter(INVALIDATED_CAPTURES);
  fake_cuda_event_query(NOT_READY);
  for (int i = 0; i < 3; i++) assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  fake_set_capture(S, ACTIVE, GLOBAL);
  fake_complete_all();
  wait_until_done(comm, 20 * TIMEOUT_MS);
  outlast(comm, 3 * TIMEOUT_MS);
  assert_healthy(comm);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into);
  assert_int_equal(fake_counter(INVALIDATED_CAPTURES), invalidated);
  fake_cuda_event_query(0);
  fake_set_capture(S, 0, GLOBAL);
  end_healthy(comm);
}

/* The per-thread default stream (which names another stream on the watchdog's thread):
 * every record records its event there too, on the program's thread. */
void test_per_thread_stream_event_each(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_event_query(NOT_READY);
  for (int i = 0; i < 3; i++)
    assert_int_equal(all_reduce_on(comm, NCCLSHIM_CU_STREAM_PER_THREAD, 8), NCCLSHIM_OK);
  assert_int_equal(counts_of(comm).events, 3);
  fake_complete_all();
  wait_until_done(comm, 20 * TIMEOUT_MS);
  end_healthy(comm);
}

/* A hang on one stream while another stream keeps recording: its clock is checked whatever
 * the other stream's events do. */
static void *record_on_other(void *arg) {
  comm_thread *b = arg;
  while (!atomic_load(&b->stop) && all_reduce_on(b->comm, OTHER, 4) == NCCLSHIM_OK) sleep_ms(1);
  return NULL;
}

void test_hang_beside_a_busy_stream(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_stream_answer(OTHER, NOT_READY); /* a long operation there first */
  assert_int_equal(all_reduce_on(comm, OTHER, 4), NCCLSHIM_OK);
  fake_stream_answer(OTHER, 0); /* then OTHER's work completes as it comes */
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #2 */
  fake_complete_all();                                      /* #1 and #2 are done */
  wait_until_done(comm, 20 * TIMEOUT_MS); /* seen so: #3 is not under #2's event */
  fake_stream_answer(S, NOT_READY);       /* S hangs from #3 on */
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #3 */
  comm_thread b = {comm, 0, 0};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, record_on_other, &b), 0);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  atomic_store(&b.stop, 1);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_non_null(strstr(callback_message, "ncclAllReduce #3 (count 8, ncclFloat32)"));
  finish_failed(comm);
}
