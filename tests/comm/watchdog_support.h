/* What the watchdog's tests share (test_comm_watchdog.c and its case files
 * watchdog_graphs.c and watchdog_races.c, one executable): a watchdog whose callback notes
 * what it saw, watched communicators on the fakes, all-reduces as a user enqueues them, the
 * bounded waits, and the controls of the fake driver (tests/fakes/fake_cuda.h). */
#ifndef NCCLSHIM_TEST_WATCHDOG_SUPPORT_H
#define NCCLSHIM_TEST_WATCHDOG_SUPPORT_H

#include <stdatomic.h>
#include <stddef.h>

#include "comm_fixture.h"

enum { NOT_READY = 600, LAUNCH_FAILED = 719, TIMEOUT_MS = 100, INTERVAL_MS = 5 };
enum { CREATED = 0, DESTROYED = 1, RECORDED = 2, QUERIED = 3 };

/* What the callback saw. It runs on the watchdog's thread, where a cmocka assert cannot
 * fail the test (it longjmps into the test thread's frame): the test thread checks these.
 * callback_action, when set, is called first (with the communicator). */
extern atomic_int callbacks;
extern char callback_message[1024];
extern ncclshim_status callback_status;
extern ncclshim_comm_state callback_state;
extern void *callback_user;
extern void (*callback_action)(ncclshim_comm *comm);

/* A watchdog with INTERVAL_MS and the noting callback. */
ncclshim_watchdog *start(void);
ncclshim_watchdog *start_every(int interval_ms);
/* Each test's setup: a fresh fake driver (events fire, records succeed, nothing captures,
 * device 0 current), no callback yet. */
int setup(void **state);
/* setup, then the fixture (comm_fixture.h): a watchdog (start) and a blocking communicator
 * on a fresh 2.28.9 fake that it watches (TIMEOUT_MS). */
int watched_2289(void **state);
/* A watched blocking communicator (TIMEOUT_MS, or timeout_ms) on a fresh fake. */
ncclshim_comm *watched(ncclshim_nccl **nccl, ncclshim_watchdog *dog);
ncclshim_comm *watched_for(ncclshim_nccl **nccl, ncclshim_watchdog *dog, int timeout_ms);
/* An all-reduce as a user enqueues it: the call, the checked result, the record (on the
 * NULL stream, or on `stream`). */
ncclshim_status all_reduce(ncclshim_comm *comm, size_t count);
ncclshim_status all_reduce_on(ncclshim_comm *comm, CUstream stream, size_t count);
/* Wait (bounded: limit_ms times the runner's slowdown) until the watchdog has failed the
 * communicator (and called back). */
void wait_for_failure(ncclshim_comm *comm, int limit_ms);
/* The same until the watchdog knows every recorded operation complete. */
void wait_until_done(ncclshim_comm *comm, int limit_ms);
/* Let `ms` pass (what a case that asserts "nothing failed past the deadline" needs), then
 * wait (bounded) until the watchdog has looked at the communicator since: a time alone
 * proves nothing where the watchdog's thread has not run (a loaded machine, valgrind). */
void outlast(ncclshim_comm *comm, int ms);
/* The watch's counts, asserted available. */
ncclshim_watch_counts counts_of(ncclshim_comm *comm);
/* The communicator's end, asserted OK: destroyed (it must be healthy) or aborted. The
 * fixture's teardown releases the rest. */
void finish_healthy(ncclshim_comm *comm);
void finish_failed(ncclshim_comm *comm);

/* What a thread of the test working on a communicator has done (operations recorded), and
 * the flag that stops it. */
typedef struct comm_thread {
  ncclshim_comm *comm;
  atomic_int done, stop;
} comm_thread;

/* Streams of device 0 made for the current test, the same for the same `i` until the next
 * setup (S and OTHER in the case files). */
enum { TEST_STREAMS = 4 };
CUstream test_stream(int i);

/* The fake driver's controls (tests/fakes/fake_cuda.h says what each does). */
enum { INVALIDATED_CAPTURES = 0, RECORDS_INTO_CAPTURES = 1, GLOBAL_MODE_QUERIES = 2 };
void fake_set_capture(CUstream stream, int status, int mode);
void fake_capture_on_record(CUstream stream);
void fake_captured_answer(int result);
int fake_counter(int which);
void fake_complete_all(void);
void fake_end_captures(void);
/* What events recorded on `stream` answer from now on (FAKE_CUDA_ANY_RESULT: the common
 * answer again). */
void fake_stream_answer(CUstream stream, int answer);
void fake_block_next_record(CUstream stream);
int fake_blocked(void);
void fake_release_record(void);

/* The case files' tests, each with its setup: X(test, setup). They are declared here, and
 * main (test_comm_watchdog.c's) runs them after its own, each released by
 * release_fixture. */
#define WATCHDOG_CASE_FILE_TESTS(X)                    \
  X(test_capture_global_pending, watched_2289)         \
  X(test_capture_records_nothing, watched_2289)        \
  X(test_capture_begun_during_a_record, watched_2289)  \
  X(test_replay_hang_names_the_graph, watched_2289)    \
  X(test_replay_long_after_capture, watched_2289)      \
  X(test_burst_tail_watched, watched_2289)             \
  X(test_capture_after_the_records, watched_2289)      \
  X(test_per_thread_stream_event_each, watched_2289)   \
  X(test_hang_beside_a_busy_stream, watched_2289)      \
  X(test_callback_frees_nothing_a_record_holds, setup) \
  X(test_slow_record_delays_nothing_else, setup)       \
  X(test_stop_from_the_callback_refused, setup)        \
  X(test_failed_state_comes_with_its_message, setup)
#define DECLARE_WATCHDOG_TEST(test, setup) void test(void **state);
WATCHDOG_CASE_FILE_TESTS(DECLARE_WATCHDOG_TEST)
#undef DECLARE_WATCHDOG_TEST

#endif
