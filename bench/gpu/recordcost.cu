// What ncclshim_comm_record costs the enqueueing thread (goal: median <= 100 ns),
// run by bench/gpu/recordcost.sh on one GPU: a one-rank NCCLSHIM_COMM_SPLIT_BLOCKING
// communicator watched (deadline 60 s, interval 10 ms) on the NCCL that
// NCCLSHIM_NCCL_LIBRARY names, 8-float all-reduces with distinct buffers (each launches a
// kernel). In one process, call by call, the two variants alternate (the first one
// rotating): the all-reduce alone, and the all-reduce followed by its record; the stream is
// synchronised every SYNC_EVERY pairs, as a program waits for its results now and then.
// Prints CSV rows what,ns:
//   record            median over pairs of (all-reduce + record) - (all-reduce alone): the goal
//   record-direct     median of the record call timed alone, less the clock's own cost
//   enqueue           median of the all-reduce alone
//   cuEventRecord, cuStreamIsCapturing, cuEventQuery   each after an all-reduce, timed alone
//   clock             clock_gettime(CLOCK_MONOTONIC) back to back
//   events-per-1000   cuEventRecord calls per 1000 records (ncclshim_comm_watch_counts)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "ncclshim/comm.h"

enum { PAIRS = 40000, SYNC_EVERY = 500, COUNT = 8, PIECES = 20000 };

static const ncclshim_nccl_table *T;
static float *sendbuf, *recvbuf;
static cudaStream_t stream;
static ncclshim_comm *comm;

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

static void die(const char *what) {
  fprintf(stderr, "recordcost: %s: %s\n", what, ncclshim_last_error());
  exit(1);
}

static void all_reduce(void) {
  if (T->ncclAllReduce(sendbuf, recvbuf, COUNT, ncclFloat32, ncclSum, ncclshim_comm_raw(comm),
                       stream) != ncclSuccess)
    die("ncclAllReduce");
}

int main(void) {
  alarm(80);
  if (ncclshim_init() != NCCLSHIM_OK) die("ncclshim_init");
  T = ncclshim_table();
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc((void **)&sendbuf, COUNT * sizeof(float)) != cudaSuccess ||
      cudaMalloc((void **)&recvbuf, COUNT * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "recordcost: no GPU\n");
    return 2;
  }
  cudaMemset(sendbuf, 0, COUNT * sizeof(float));
  ncclUniqueId id;
  if (T->ncclGetUniqueId(&id) != ncclSuccess) die("ncclGetUniqueId");
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  if (ncclshim_comm_init(NULL, 1, &id, 0, &options, &comm) != NCCLSHIM_OK) die("init");
  if (ncclshim_comm_wait(comm, 60000) != NCCLSHIM_OK) die("wait");
  ncclshim_watchdog_options wo = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  wo.interval_ms = 10;
  ncclshim_watchdog *dog = NULL;
  if (ncclshim_watchdog_start(&wo, &dog) != NCCLSHIM_OK) die("watchdog");
  if (ncclshim_comm_watch(comm, dog, 60000) != NCCLSHIM_OK) die("watch");

  std::vector<double> clock_ns, alone, with, direct;
  for (int i = 0; i < PIECES; i++) {
    int64_t a = now_ns(), b = now_ns();
    clock_ns.push_back((double)(b - a));
  }
  double clock_cost = median(clock_ns);
  for (int warm = 0; warm < 1000; warm++) {
    all_reduce();
    ncclshim_comm_record(comm, stream, "ncclAllReduce", COUNT, ncclFloat32);
  }
  cudaStreamSynchronize(stream);
  ncclshim_watch_counts before = NCCLSHIM_WATCH_COUNTS_INIT, after = before;
  if (ncclshim_comm_watch_counts(comm, &before) != NCCLSHIM_OK) die("counts");
  for (int i = 0; i < PAIRS; i++) {
    for (int turn = 0; turn < 2; turn++) {
      int recorded = (turn + i) % 2;
      int64_t t0 = now_ns();
      all_reduce();
      if (!recorded) {
        alone.push_back((double)(now_ns() - t0));
        continue;
      }
      int64_t t1 = now_ns();
      if (ncclshim_comm_record(comm, stream, "ncclAllReduce", COUNT, ncclFloat32) != NCCLSHIM_OK)
        die("record");
      int64_t t2 = now_ns();
      with.push_back((double)(t2 - t0) - clock_cost);  // the extra clock read inside
      direct.push_back((double)(t2 - t1) - clock_cost);
    }
    if (i % SYNC_EVERY == SYNC_EVERY - 1) cudaStreamSynchronize(stream);
  }
  cudaStreamSynchronize(stream);
  if (ncclshim_comm_watch_counts(comm, &after) != NCCLSHIM_OK) die("counts");
  std::vector<double> diff(alone.size());
  for (size_t i = 0; i < alone.size(); i++) diff[i] = with[i] - alone[i];

  // The pieces, each right after an all-reduce as a record would be.
  const ncclshim_cuda_table *cu = ncclshim_cuda_functions(ncclshim_cuda_default());
  CUevent event;
  cu->cuEventCreate(&event, NCCLSHIM_CU_EVENT_DISABLE_TIMING);
  std::vector<double> ev_record, is_capturing, ev_query;
  for (int i = 0; i < PIECES; i++) {
    all_reduce();
    int64_t t0 = now_ns();
    cu->cuEventRecord(event, (CUstream)stream);
    int64_t t1 = now_ns();
    ncclshim_cu_stream_capture_status capture;
    cu->cuStreamIsCapturing((CUstream)stream, &capture);
    int64_t t2 = now_ns();
    cu->cuEventQuery(event);
    int64_t t3 = now_ns();
    ev_record.push_back((double)(t1 - t0) - clock_cost);
    is_capturing.push_back((double)(t2 - t1) - clock_cost);
    ev_query.push_back((double)(t3 - t2) - clock_cost);
    if (i % SYNC_EVERY == SYNC_EVERY - 1) cudaStreamSynchronize(stream);
  }
  cudaStreamSynchronize(stream);
  uint64_t records = after.recorded - before.recorded, events = after.events - before.events;
  printf("what,ns\n");
  printf("record,%.1f\n", median(diff));
  printf("record-direct,%.1f\n", median(direct));
  printf("enqueue,%.1f\n", median(alone));
  printf("cuEventRecord,%.1f\n", median(ev_record));
  printf("cuStreamIsCapturing,%.1f\n", median(is_capturing));
  printf("cuEventQuery,%.1f\n", median(ev_query));
  printf("clock,%.1f\n", clock_cost);
  printf("events-per-1000,%.1f\n", records ? 1000.0 * (double)events / (double)records : 0.0);
  cu->cuEventDestroy(event);
  ncclshim_comm_destroy(comm, 10000);
  ncclshim_comm_free(comm);
  ncclshim_watchdog_stop(dog);
  return 0;
}
