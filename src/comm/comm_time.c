/* The monotonic clock and the backoff every bounded wait polls with. */
#include <sched.h>
#include <time.h>

#include "comm_internal.h"

/* The first polls only yield: a collective often finishes within microseconds, and a sleep
 * rounds up to tens of them. Then sleeps double from 10 us to 1 ms. */
enum { YIELDS = 16, FIRST_SLEEP_NS = 10 * 1000, LONGEST_SLEEP_NS = 1000 * 1000 };

int64_t ncclshim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ncclshim_deadline_ns(int timeout_ms) {
  return ncclshim_now_ns() + (int64_t)timeout_ms * 1000000;
}

ncclshim_backoff ncclshim_backoff_start(int64_t deadline_ns) {
  ncclshim_backoff backoff = {deadline_ns, FIRST_SLEEP_NS, YIELDS};
  return backoff;
}

int ncclshim_backoff_sleep(ncclshim_backoff *backoff) {
  int64_t left = backoff->deadline_ns - ncclshim_now_ns();
  if (left <= 0) return 0;
  if (backoff->yields > 0) {
    backoff->yields--;
    sched_yield();
    return 1;
  }
  int64_t step = backoff->sleep_ns < left ? backoff->sleep_ns : left;
  struct timespec ts = {(time_t)(step / 1000000000), (long)(step % 1000000000)};
  while (nanosleep(&ts, &ts) != 0) {
  } /* a signal cut it short: sleep the rest */
  if (backoff->sleep_ns < LONGEST_SLEEP_NS) backoff->sleep_ns *= 2;
  if (backoff->sleep_ns > LONGEST_SLEEP_NS) backoff->sleep_ns = LONGEST_SLEEP_NS;
  return 1;
}
