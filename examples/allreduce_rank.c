/* One rank of the example: its GPU, its communicator, all-reduce and broadcast of float32
 * checked on the host, and the times. Every wait has a deadline: a peer that never arrives
 * or dies is reported and the communicator aborted, never left hanging. In the default mode
 * a watchdog thread bounds the collectives: each is recorded after it is enqueued (one
 * cuEventRecord), and a hang fails the communicator, which the next call reports. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "allreduce.h"
#include "ncclshim/cuda.h"

typedef struct rank_state {
  const job *job;
  ncclshim_nccl *nccl;
  const ncclshim_nccl_table *t;
  ncclshim_cuda *cuda;
  const ncclshim_cuda_table *cu;
  int activated;
  CUstream stream;
  ncclshim_comm *comm;
  ncclshim_watchdog *dog; /* MODE_WATCHDOG */
  CUdeviceptr send, recv;
  float *host;
} rank_state;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int failed(const rank_state *s, const char *what) {
  fprintf(stderr, "rank %d: %s: %s\n", s->job->rank, what, ncclshim_last_error());
  return RANK_FAILED;
}

static int cuda_failed(const rank_state *s, const char *call, ncclshim_cu_result rc) {
  fprintf(stderr, "rank %d: %s failed: %s (%d): %s\n", s->job->rank, call,
          ncclshim_cuda_result_name(s->cuda, rc), rc, ncclshim_cuda_result_string(s->cuda, rc));
  return RANK_FAILED;
}

#define CU(s, call, args)                                                \
  do {                                                                   \
    ncclshim_cu_result rc_ = (s)->cu->call args;                         \
    if (rc_ != NCCLSHIM_CUDA_SUCCESS) return cuda_failed(s, #call, rc_); \
  } while (0)

/* cuInit, then this rank's device current and a stream; RANK_NO_GPU when there is none. */
static int open_gpu(rank_state *s) {
  s->cuda = ncclshim_cuda_default();
  s->cu = ncclshim_cuda_functions(s->cuda);
  ncclshim_status status = ncclshim_cuda_init(s->cuda);
  if (status == NCCLSHIM_DRIVER_UNAVAILABLE || status == NCCLSHIM_NO_DEVICE) {
    printf("rank %d: no GPU (%s)\n", s->job->rank, ncclshim_last_error());
    return RANK_NO_GPU;
  }
  int devices = 0;
  if (status != NCCLSHIM_OK || ncclshim_cuda_device_count(s->cuda, &devices) != NCCLSHIM_OK)
    return failed(s, "CUDA initialisation");
  if (s->job->local_rank >= devices) {
    fprintf(stderr, "rank %d: local rank %d, but this machine shows %d GPU(s)\n", s->job->rank,
            s->job->local_rank, devices);
    return RANK_FAILED;
  }
  if (ncclshim_cuda_device_activate(s->cuda, s->job->local_rank, NULL) != NCCLSHIM_OK)
    return failed(s, "activating the GPU");
  s->activated = 1;
  if (ncclshim_cuda_stream_create(s->cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &s->stream) !=
      NCCLSHIM_OK)
    return failed(s, "creating a stream");
  return RANK_PASSED;
}

static int open_comm(rank_state *s) {
  static const int blocking[] = {NCCLSHIM_COMM_SPLIT_BLOCKING, NCCLSHIM_COMM_NONBLOCKING,
                                 NCCLSHIM_COMM_BLOCKING};
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = blocking[s->job->mode];
  if (ncclshim_comm_init(s->nccl, s->job->nranks, &s->job->id, s->job->rank, &options, &s->comm) !=
      NCCLSHIM_OK)
    return failed(s, "creating the communicator");
  if (ncclshim_comm_wait(s->comm, s->job->timeout_ms) != NCCLSHIM_OK)
    return failed(s, "waiting for every rank to join");
  if (s->job->mode == MODE_WATCHDOG &&
      (ncclshim_watchdog_start(NULL, &s->dog) != NCCLSHIM_OK ||
       ncclshim_comm_watch(s->comm, s->dog, s->job->timeout_ms) != NCCLSHIM_OK))
    return failed(s, "watching the communicator");
  return RANK_PASSED;
}

static float sum_value(int nranks, size_t i) {
  return (float)(nranks * (nranks + 1) / 2) * (float)(i % 5 + 1);
}
static float bcast_value(size_t i) { return 1000.0f + (float)(i % 13); }

/* Run one collective `iters` times and wait for it; the average time per call in us. */
typedef ncclResult_t (*collective_fn)(const rank_state *s);
static ncclResult_t all_reduce(const rank_state *s) {
  return s->t->ncclAllReduce((const void *)(uintptr_t)s->send, (void *)(uintptr_t)s->recv,
                             s->job->count, ncclFloat32, ncclSum, ncclshim_comm_raw(s->comm),
                             s->stream);
}
static ncclResult_t broadcast(const rank_state *s) {
  return s->t->ncclBroadcast((const void *)(uintptr_t)s->send, (void *)(uintptr_t)s->recv,
                             s->job->count, ncclFloat32, 0, ncclshim_comm_raw(s->comm), s->stream);
}

static int timed(rank_state *s, collective_fn fn, const char *name, int iters, double *us) {
  double start = now_us();
  for (int i = 0; i < iters; i++) {
    if (ncclshim_comm_check(s->comm, fn(s), name, s->job->timeout_ms) != NCCLSHIM_OK)
      return failed(s, name);
    if (s->dog != NULL &&
        ncclshim_comm_record(s->comm, s->stream, name, s->job->count, ncclFloat32) != NCCLSHIM_OK)
      return failed(s, name);
  }
  if (ncclshim_comm_wait_stream(s->comm, s->cuda, s->stream, s->job->timeout_ms) != NCCLSHIM_OK)
    return failed(s, name);
  *us = (now_us() - start) / iters;
  return RANK_PASSED;
}

/* recv == expected(i) everywhere; prints the first mismatch. */
static int check(rank_state *s, const char *name, float (*expected)(int, size_t)) {
  size_t bytes = s->job->count * sizeof(float);
  CU(s, cuMemcpyDtoH, (s->host, s->recv, bytes));
  for (size_t i = 0; i < s->job->count; i++) {
    float want = expected(s->job->nranks, i);
    if (s->host[i] != want) {
      fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", s->job->rank, name, i,
              (double)s->host[i], (double)want);
      return RANK_FAILED;
    }
  }
  return RANK_PASSED;
}

static float expected_bcast(int nranks, size_t i) {
  (void)nranks;
  return bcast_value(i);
}

static int run(rank_state *s) {
  const job *j = s->job;
  size_t bytes = j->count * sizeof(float);
  int rc;
  if ((s->host = malloc(bytes)) == NULL) return failed(s, "out of host memory");
  CU(s, cuMemAlloc, (&s->send, bytes));
  CU(s, cuMemAlloc, (&s->recv, bytes));

  for (size_t i = 0; i < j->count; i++) s->host[i] = (float)(j->rank + 1) * (float)(i % 5 + 1);
  CU(s, cuMemcpyHtoD, (s->send, s->host, bytes));
  CU(s, cuMemsetD8, (s->recv, 0xff, bytes)); /* NaN until written */
  double ar_us = 0, bc_us = 0;
  if ((rc = timed(s, all_reduce, "ncclAllReduce", 1, &ar_us)) != RANK_PASSED ||
      (rc = timed(s, all_reduce, "ncclAllReduce", j->iters, &ar_us)) != RANK_PASSED ||
      (rc = check(s, "all-reduce", sum_value)) != RANK_PASSED)
    return rc;

  for (size_t i = 0; i < j->count; i++) s->host[i] = bcast_value(i);
  if (j->rank == 0) CU(s, cuMemcpyHtoD, (s->send, s->host, bytes));
  CU(s, cuMemsetD8, (s->recv, 0xff, bytes));
  if ((rc = timed(s, broadcast, "ncclBroadcast", 1, &bc_us)) != RANK_PASSED ||
      (rc = timed(s, broadcast, "ncclBroadcast", j->iters, &bc_us)) != RANK_PASSED ||
      (rc = check(s, "broadcast", expected_bcast)) != RANK_PASSED)
    return rc;

  double n = j->nranks;
  printf(
      "rank %d/%d (GPU %d): all-reduce %zu floats %.1f us (%.2f GB/s bus), broadcast %.1f us "
      "(%.2f GB/s bus): results OK\n",
      j->rank, j->nranks, j->local_rank, j->count, ar_us, bytes * 2 * (n - 1) / n / ar_us / 1e3,
      bc_us, bytes / bc_us / 1e3);
  return RANK_PASSED;
}

/* Tear down whatever was set up; a communicator that cannot be destroyed is aborted. */
static void close_all(rank_state *s, int failed_run) {
  if (s->comm != NULL) {
    if (failed_run || ncclshim_comm_destroy(s->comm, s->job->timeout_ms) != NCCLSHIM_OK) {
      if (!failed_run) failed(s, "destroying the communicator");
      if (ncclshim_comm_abort(s->comm, s->job->timeout_ms) != NCCLSHIM_OK)
        failed(s, "aborting the communicator");
    }
    ncclshim_comm_free(s->comm);
  }
  ncclshim_watchdog_stop(s->dog);
  if (s->send) s->cu->cuMemFree(s->send);
  if (s->recv) s->cu->cuMemFree(s->recv);
  if (s->stream) ncclshim_cuda_stream_destroy(s->cuda, s->stream);
  if (s->activated) ncclshim_cuda_device_release(s->cuda, s->job->local_rank);
  free(s->host);
}

int run_rank(ncclshim_nccl *nccl, const job *job) {
  rank_state s = {.job = job, .nccl = nccl, .t = ncclshim_nccl_functions(nccl)};
  int rc = open_gpu(&s);
  if (rc == RANK_PASSED) rc = open_comm(&s);
  if (rc == RANK_PASSED) rc = run(&s);
  if (rc != RANK_NO_GPU) close_all(&s, rc != RANK_PASSED);
  return rc;
}
