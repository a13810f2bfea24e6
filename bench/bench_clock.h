/* What the benchmarks that time single calls share: the monotonic clock in ns, and the
 * median of a sample (sorted in place). Header-only: the GPU host's programs are built by
 * their scripts without the meson tree (bench/gpu/percall.sh adds -Ibench). */
#ifndef NCCLSHIM_BENCH_CLOCK_H
#define NCCLSHIM_BENCH_CLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* qsort's order of doubles. */
static inline int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0 .. n), n > 0; v is left sorted. */
static inline double median_of(double *v, size_t n) {
  qsort(v, n, sizeof(*v), by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
