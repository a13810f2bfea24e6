/* What the communicator tests' cases share: a communicator on a fake, made by the case's
 * cmocka setup and released by its teardown (which cmocka runs after a failed test too), so
 * that a test holds only what it checks; and the bounded wait on a condition that every
 * test uses instead of a sleep. */
#ifndef NCCLSHIM_TEST_COMM_FIXTURE_H
#define NCCLSHIM_TEST_COMM_FIXTURE_H

#include "comm_fakes.h"
#include "ncclshim/watchdog.h"
#include "support.h"

/* The test reads it from *state. A test that frees the communicator or stops the watchdog
 * itself sets the field to NULL, so that the teardown leaves it alone. `params` is the
 * case's initial state (CMUnitTest.initial_state): one test function serves the rows of a
 * table of cases, each under its own name. */
typedef struct comm_fixture {
  ncclshim_nccl *nccl;
  ncclshim_comm *comm;    /* NULL for on_*, unless the test makes one there */
  ncclshim_watchdog *dog; /* NULL unless the test's setup or the test started one */
  const void *params;
} comm_fixture;

/* Setups. on_*: the handle of that fake variant, reset (fake_open). blocking_*: and a READY
 * blocking communicator on it. nonblocking_*: a non-blocking one, INITIALIZING (it finishes
 * as the fake's async script, which the test may set first, says). */
int on_2289(void **state);
int on_2297(void **state);
int blocking_2289(void **state);
int blocking_2297(void **state);
int nonblocking_2289(void **state);
int nonblocking_2297(void **state);
/* A setup of any fake variant and communicator (blocking as ncclshim_comm_options takes it,
 * or -1 for none). */
int open_fixture(void **state, const char *variant, int blocking);
/* Teardown: free the communicator, stop the watchdog (it must answer OK), close the handle;
 * nothing for a case whose setup made no fixture. *state is NULL after it. */
int release_fixture(void **state);
/* The fixture's communicator and handle, read from a test's state. */
static inline ncclshim_comm *fixture_comm(void **state) { return ((comm_fixture *)*state)->comm; }
static inline ncclshim_nccl *fixture_nccl(void **state) { return ((comm_fixture *)*state)->nccl; }

/* NCCL's `step` fails once with `error` inside `call` (destroy, abort, wait): NCCL_ERROR
 * whose message holds `message`, the communicator then in state `after`, and an abort
 * still releases it. */
typedef struct step_failure {
  ncclshim_status (*call)(ncclshim_comm *comm, int timeout_ms);
  const char *step;
  int error;
  const char *message;
  ncclshim_comm_state after;
} step_failure;
void assert_step_fails(ncclshim_comm *comm, const step_failure *failure);

/* How many looks the watchdog has taken at READY communicators, as the fake counts them:
 * each look reads its clock and the operations outstanding, then asks
 * ncclCommGetAsyncError once (a test asks it only while it waits itself). Looks at one
 * communicator come in turn: the second look counted after a moment began after it. */
int watchdog_looks(void);

void sleep_ms(int ms);

/* Poll `condition` every millisecond until it holds or `limit_ms` (times the runner's
 * slowdown, test_time_scale) has passed. The caller then asserts the condition: a limit
 * passed fails the test there, naming what never came. */
#define WAIT_FOR(condition, limit_ms)                            \
  for (int64_t wait_until_ = now_ms() + test_slack_ms(limit_ms); \
       !(condition) && now_ms() < wait_until_;)                  \
  sleep_ms(1)

#endif
