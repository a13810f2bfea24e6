// What the tracker's GPU programs share (tests/gpu/track/tracker_comm.cu, tracker_nccl.cu; run by
// tests/gpu/track/tracker.sh): the clock, medians, the three kinds of stream a program enqueues on,
// and a stream held by a kernel that spins on a host-mapped flag.
//   created     a stream of the program's own (cudaStreamCreateWithFlags, non-blocking)
//   legacy      the legacy default stream (cudaStreamLegacy, CU_STREAM_LEGACY)
//   per-thread  the per-thread default stream (cudaStreamPerThread, CU_STREAM_PER_THREAD)
// A held stream is released by tracker_release(), or by the kernel itself after its limit (a
// kernel that waited forever would deadlock an abort): tracker_gave_up() then answers 1.
// Build with -Itests/gpu/dropin.
#ifndef NCCLSHIM_BENCH_TRACKER_COMMON_CUH
#define NCCLSHIM_BENCH_TRACKER_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "spin_kernel.cuh" /* tests/gpu/dropin: the kernel that holds a stream */

enum { TRACKER_KINDS = 3 };
static const char *const tracker_kind_names[TRACKER_KINDS] = {"created", "legacy", "per-thread"};

static inline int64_t tracker_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double tracker_ms_since(int64_t start_ns) {
  return (double)(tracker_now_ns() - start_ns) / 1e6;
}

static inline void tracker_sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

// The median of back-to-back clock reads: what a timed interval includes besides its call.
static inline double tracker_clock_ns(void) {
  std::vector<double> v;
  for (int i = 0; i < 20000; i++) {
    int64_t a = tracker_now_ns(), b = tracker_now_ns();
    v.push_back((double)(b - a));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static inline double tracker_median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The kind's index from its name; -1 for none.
static inline int tracker_kind(const char *name) {
  for (int k = 0; k < TRACKER_KINDS; k++)
    if (strcmp(name, tracker_kind_names[k]) == 0) return k;
  return -1;
}

// A stream of that kind: a new one for created (destroy it with tracker_stream_done).
static inline cudaError_t tracker_stream(int kind, cudaStream_t *out) {
  if (kind == 0) return cudaStreamCreateWithFlags(out, cudaStreamNonBlocking);
  *out = kind == 1 ? cudaStreamLegacy : cudaStreamPerThread;
  return cudaSuccess;
}

static inline void tracker_stream_done(int kind, cudaStream_t s) {
  if (kind == 0) cudaStreamDestroy(s);
}

// The hold: flag[0] releases, flag[1] says the kernel gave up.
static volatile int *tracker_flag;
static int *tracker_flag_device;

static inline cudaError_t tracker_hold_init(void) {
  cudaError_t e = cudaHostAlloc((void **)&tracker_flag, 2 * sizeof(int), cudaHostAllocMapped);
  if (e == cudaSuccess)
    e = cudaHostGetDevicePointer((void **)&tracker_flag_device, (void *)tracker_flag, 0);
  return e;
}

// Holds `s` until tracker_release(), at most limit_ms.
static inline cudaError_t tracker_hold(cudaStream_t s, int limit_ms) {
  tracker_flag[0] = tracker_flag[1] = 0;
  spin<<<1, 1, 0, s>>>(tracker_flag_device, (unsigned long long)limit_ms * 1000000ull);
  return cudaGetLastError();
}

static inline void tracker_release(void) { tracker_flag[0] = 1; }
static inline int tracker_gave_up(void) { return tracker_flag[1]; }

#endif
