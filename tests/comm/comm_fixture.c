/* What the communicator tests' cases share: comm_fixture.h. */
#include "comm_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

static comm_fixture fixture;

int open_fixture(void **state, const char *variant, int blocking) {
  fake_cuda_fresh();
  fixture = (comm_fixture){fake_open(variant), NULL, NULL, *state};
  if (blocking >= 0) fixture.comm = fake_comm(fixture.nccl, blocking);
  *state = &fixture;
  return 0;
}

int on_2289(void **state) { return open_fixture(state, "2.28.9", -1); }
int on_2297(void **state) { return open_fixture(state, "2.29.7", -1); }
int blocking_2289(void **state) { return open_fixture(state, "2.28.9", 1); }
int blocking_2297(void **state) { return open_fixture(state, "2.29.7", 1); }
int nonblocking_2289(void **state) { return open_fixture(state, "2.28.9", 0); }
int nonblocking_2297(void **state) { return open_fixture(state, "2.29.7", 0); }

int release_fixture(void **state) {
  comm_fixture *f = *state;
  if (f == NULL) return 0; /* a case whose setup made no fixture */
  ncclshim_comm_free(f->comm);
  ncclshim_status stopped = ncclshim_watchdog_stop(f->dog);
  ncclshim_nccl_close(f->nccl);
  *f = (comm_fixture){NULL, NULL, NULL, NULL};
  *state = NULL;
  return stopped == NCCLSHIM_OK ? 0 : -1;
}

void assert_step_fails(ncclshim_comm *comm, const step_failure *failure) {
  fake_inject(failure->step, failure->error, 1);
  assert_int_equal(failure->call(comm, 1000), NCCLSHIM_NCCL_ERROR);
  assert_message(failure->message);
  assert_int_equal(ncclshim_comm_state_of(comm), failure->after);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
}

int watchdog_looks(void) { return fake_count("ncclCommGetAsyncError"); }

void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}
