/* The watchdog and CUDA graphs, on the capture fake (part of test_comm_watchdog):
 *  - a global-mode capture begun while recorded work is pending: the watchdog's queries
 *    (thread-local mode) invalidate nothing, and nothing fails however long it lasts;
 *  - records on a capturing stream (or on the legacy stream during a global capture)
 *    record no event, start no clock, count as captured;
 *  - a capture that begins between a record's check and its cuEventRecord: the event's
 *    capture answer (907, or INVALID_VALUE) fails nothing, and a catch-up records it again;
 *  - graph replays: a hang names the graph and its collectives; replays long after the
 *    capture fail nothing; labels are copied and cut;
 *  - the last operations of a burst, which no record follows: the watchdog's catch-up event
 *    detects their hang, and is never recorded into a stream that captures. */
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
  char expected[96];
  snprintf(expected, sizeof(expected),
           "cuStreamIsCapturing(%p) failed: CUDA_ERROR_INVALID_HANDLE (400)", (void *)OTHER);
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
 * query answers `answer`; nothing fails, and once the capture ends a catch-up records the
 * operation again, whose event fires. */
static void capture_begun_during_a_record(ncclshim_comm *comm, int answer) {
  fake_captured_answer(answer);
  fake_capture_on_record(S);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  assert_int_equal(all_reduce_on(comm, S, 16), NCCLSHIM_OK);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into + 1);
  outlast(comm, 3 * TIMEOUT_MS); /* the capture answer restarts the clock: no failure */
  assert_healthy(comm);
  assert_int_equal(counts_of(comm).catch_ups, 0); /* never into the capture */
  fake_set_capture(S, 0, THREAD_LOCAL);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  assert_true(counts_of(comm).catch_ups >= 1);
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

/* A burst whose first event is pending: the first operation records it, the others share
 * the next one. The work stops right after the first: no record follows the others, and the
 * watchdog's catch-up event is what detects their hang. */
void test_burst_tail_caught_up(void **state) {
  /* A pass closes their group after 1/20 of the deadline: the 5 records fit. */
  const int deadline_ms = long_timeout_ms();
  ncclshim_comm *comm = fixture_comm(state);
  int recorded = fake_cuda_events(RECORDED);
  fake_cuda_event_query(NOT_READY);
  int64_t start = now_ms();
  for (int i = 0; i < 5; i++) assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  ncclshim_watch_counts c = counts_of(comm);
  assert_int_equal(c.recorded, 5);
  assert_int_equal(c.events, 1);
  assert_int_equal(c.outstanding, 5);
  assert_int_equal(fake_cuda_events(RECORDED) - recorded, 1);
  fake_complete_all(); /* #1 is done; #2 .. #5 never complete */
  wait_for_failure(comm, 20 * deadline_ms);
  assert_true(now_ms() - start >= deadline_ms); /* their clock started at #2's record */
  assert_int_equal(counts_of(comm).catch_ups, 1);
  assert_non_null(strstr(callback_message, "ncclAllReduce #2 (count 8, ncclFloat32)"));
  assert_non_null(strstr(callback_message, "one event covers it and the 3 after it, to #5"));
  finish_failed(comm);
}

/* Records read no clock while they share: the watchdog's pass closes a group once it spans
 * 1/20 of the deadline less one interval, and the next record then records the event that
 * the whole group shares. */
void test_group_closed_by_the_pass(void **state) {
  const int deadline_ms = long_timeout_ms(), close_ms = deadline_ms / 20 - INTERVAL_MS;
  ncclshim_comm *comm = fixture_comm(state);
  int recorded = fake_cuda_events(RECORDED);
  fake_cuda_event_query(NOT_READY);
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #1 records the first event */
  int64_t start = now_ms();
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #2 begins the group */
  uint64_t ops = 2;
  while (counts_of(comm).events == 1 && now_ms() - start < 20 * deadline_ms) {
    sleep_ms(1); /* paces the records; the event count is the condition */
    assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
    ops++;
  }
  ncclshim_watch_counts c = counts_of(comm);
  assert_int_equal(c.events, 2);
  assert_int_equal(c.catch_ups, 0); /* a record closed it: #1's event is still pending */
  assert_int_equal(c.outstanding, ops);
  assert_int_equal(fake_cuda_events(RECORDED) - recorded, 2);
  assert_true(now_ms() - start >= close_ms);
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* a new group: shares again */
  assert_int_equal(counts_of(comm).events, 2);
  fake_cuda_event_query(0);
  fake_complete_all();
  wait_until_done(comm, 20 * deadline_ms);
  end_healthy(comm);
}

/* The same tail, but the stream starts capturing before the catch-up: the watchdog records
 * nothing into it and holds those operations' clock until the capture ends. */
void test_tail_held_while_capturing(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  int into = fake_counter(RECORDS_INTO_CAPTURES);
  int invalidated = fake_counter(INVALIDATED_CAPTURES);
  fake_cuda_event_query(NOT_READY);
  for (int i = 0; i < 3; i++) assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK);
  fake_set_capture(S, ACTIVE, GLOBAL);
  fake_complete_all(); /* the first event fires: the others wait for a catch-up */
  outlast(comm, 3 * TIMEOUT_MS);
  assert_healthy(comm);
  assert_int_equal(fake_counter(RECORDS_INTO_CAPTURES), into);
  assert_int_equal(fake_counter(INVALIDATED_CAPTURES), invalidated);
  fake_cuda_event_query(0);
  fake_set_capture(S, 0, GLOBAL);
  wait_until_done(comm, 20 * TIMEOUT_MS);
  assert_true(counts_of(comm).catch_ups >= 1);
  end_healthy(comm);
}

/* The per-thread default stream names another stream on the watchdog's thread: there,
 * every record records its own event (no catch-up could cover it). */
void test_per_thread_stream_never_shares(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_cuda_event_query(NOT_READY);
  for (int i = 0; i < 3; i++)
    assert_int_equal(all_reduce_on(comm, NCCLSHIM_CU_STREAM_PER_THREAD, 8), NCCLSHIM_OK);
  assert_int_equal(counts_of(comm).events, 3);
  fake_complete_all();
  wait_until_done(comm, 20 * TIMEOUT_MS);
  assert_int_equal(counts_of(comm).catch_ups, 0);
  end_healthy(comm);
}

/* Operations waiting for an event on one stream while another stream keeps the ring busy:
 * their catch-up is due once nothing of their own stream is outstanding, and their clock is
 * checked even while the other stream's events are outstanding. */
static void *record_on_other(void *arg) {
  comm_thread *b = arg;
  while (!atomic_load(&b->stop) && all_reduce_on(b->comm, OTHER, 4) == NCCLSHIM_OK) sleep_ms(1);
  return NULL;
}

void test_tail_caught_up_beside_a_busy_stream(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_stream_answer(OTHER, NOT_READY); /* a long operation there first */
  assert_int_equal(all_reduce_on(comm, OTHER, 4), NCCLSHIM_OK);
  fake_stream_answer(OTHER, 0); /* then OTHER's work completes as it comes */
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #2: its own event */
  assert_int_equal(all_reduce_on(comm, S, 8), NCCLSHIM_OK); /* #3 waits for the next */
  fake_stream_answer(S, NOT_READY);                         /* S hangs from #3 on */
  fake_complete_all();                                      /* #1 and #2 are done */
  comm_thread b = {comm, 0, 0};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, record_on_other, &b), 0);
  wait_for_failure(comm, 20 * TIMEOUT_MS);
  atomic_store(&b.stop, 1);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_non_null(strstr(callback_message, "ncclAllReduce #3 (count 8, ncclFloat32)"));
  finish_failed(comm);
}
