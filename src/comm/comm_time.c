/* The pacing every bounded wait polls with (its clock is the tracker's, ncs_track_now_ns).
 *
 * A wait must notice completion within max(2 us, 5 %) of the moment it happened, for waits of
 * a microsecond to seconds. A sleep cannot promise that for short waits: nanosleep returns
 * tens of microseconds late (the kernel's timer slack, 50 us by default, plus the wake-up).
 * So a wait polls back to back while a sleep would overshoot by more than 5 % of the time already
 * waited, and only then sleeps, for WAIT_FRACTION of the time already waited minus the lateness its
 * sleeps have shown, capped at LONGEST_SLEEP_NS. With the default slack that switch comes
 * after about 1.75 ms of waiting; a 10 s wait then polls about once a millisecond. The
 * polling phase ends after NCCLSHIM_WAIT_SPIN_US (default 2000) whatever the lateness, so
 * that a loaded machine, whose sleeps come back late, does not make waits spin longer; 0
 * sleeps from the start, for callers who would rather spend fewer cycles than return
 * sooner (docs/collectives.md has the measured CPU cost). */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "src/track/track.h"
#include "comm_internal.h"

enum {
  WAIT_FRACTION = 25,             /* sleep at most 1/25 (4 %) of the time waited so far */
  SHORTEST_SLEEP_NS = 10 * 1000,  /* a shorter sleep is all overhead: poll instead */
  LONGEST_SLEEP_NS = 1000 * 1000, /* so that a long wait still looks every millisecond */
  FIRST_LATENESS_NS = 60 * 1000,  /* the guess before a sleep has been measured */
  YIELD_EVERY = 64                /* back-to-back polls between two sched_yield calls */
};

/* Between back-to-back polls: the CPU's spin-wait hint. A sched_yield after every poll cost
 * tens of microseconds whenever another thread (NCCL's proxy) was ready on the same core, so
 * the core is only given up every YIELD_EVERY polls, in case a thread there needs it. */
static void relax(ncs_backoff *backoff) {
  if (++backoff->polls % YIELD_EVERY == 0) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int64_t spin_limit_ns = 2000 * 1000; /* NCCLSHIM_WAIT_SPIN_US */
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;

static void read_spin_limit(void) {
  const char *text = secure_getenv("NCCLSHIM_WAIT_SPIN_US");
  if (text == NULL || *text == '\0') return;
  char *end = NULL;
  long long us = strtoll(text, &end, 10);
  /* A value whose ns do not fit is "anything else" too: the default. */
  if (*end == '\0' && us >= 0 && us <= INT64_MAX / 1000) spin_limit_ns = (int64_t)us * 1000;
}

int64_t ncs_deadline_ns(int timeout_ms) {
  return ncs_track_now_ns() + (int64_t)timeout_ms * 1000000;
}

ncclshim_status ncs_negative_timeout(const char *who, int timeout_ms) {
  return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: timeout %d ms is negative (no wait is unbounded)",
                  who, timeout_ms);
}

ncs_backoff ncs_backoff_start(int64_t deadline_ns) {
  pthread_once(&spin_once, read_spin_limit);
  ncs_backoff backoff = {deadline_ns, ncs_track_now_ns(), FIRST_LATENESS_NS, spin_limit_ns, 0};
  return backoff;
}

int64_t ncs_backoff_step_ns(const ncs_backoff *backoff, int64_t now) {
  int64_t waited = now - backoff->start_ns;
  int64_t step = waited / WAIT_FRACTION - backoff->lateness_ns;
  if (waited >= backoff->spin_limit_ns && step < SHORTEST_SLEEP_NS)
    step = SHORTEST_SLEEP_NS; /* polled back to back long enough */
  if (step < SHORTEST_SLEEP_NS) return 0;
  return step < LONGEST_SLEEP_NS ? step : LONGEST_SLEEP_NS;
}

int ncs_backoff_sleep(ncs_backoff *backoff) {
  int64_t now = ncs_track_now_ns();
  int64_t left = backoff->deadline_ns - now;
  if (left <= 0) return 0;
  int64_t step = ncs_backoff_step_ns(backoff, now);
  if (step == 0) {
    relax(backoff);
    return 1;
  }
  if (step > left) step = left;
  struct timespec ts = {(time_t)(step / 1000000000), (long)(step % 1000000000)};
  while (nanosleep(&ts, &ts) != 0) {
  } /* a signal cut it short: sleep the rest */
  /* Learn how late sleeps come back: the latest lateness counts half. */
  int64_t late = ncs_track_now_ns() - now - step;
  if (late < 0) late = 0;
  backoff->lateness_ns = (backoff->lateness_ns + late) / 2;
  return 1;
}
