// The watchdog and CUDA graphs on one GPU, run by tests/gpu/comm/graphs.sh: one-rank
// NCCLSHIM_COMM_SPLIT_BLOCKING communicators on the NCCL that NCCLSHIM_NCCL_LIBRARY names,
// watched with a DEADLINE_MS deadline and an INTERVAL_MS interval. An all-reduce with distinct
// buffers launches a kernel; a "hang" is a kernel before it spinning on a host-mapped flag,
// which gives up by itself after SPIN_LIMIT_S. Prints one CSV row per case:
//   case,verdict,nccl,ms,limit_ms,detail
//   capture-global-pending  work recorded and pending, then a global-mode capture held open
//                           twice the deadline: it ends without invalidation, nothing fails
//   capture-threadlocal     a thread-local capture of recorded all-reduces held open twice
//                           the deadline, then 3 replays: nothing fails
//   replay-watched-ok       3 replays launched twice the deadline after the capture
//   replay-hang-detected    a replay whose collective waits behind the spinning kernel: the
//                           callback within deadline .. (deadline + interval) * 1.1, and the
//                           message names the graph and its collectives
//   isolation               a second watched communicator keeps working, on its own stream,
//                           while the first one hangs and is failed
// Usage: graphs (every case) | graphs CASE. Exit 0 when every verdict is ok.
#include <cuda_runtime.h>

#include <atomic>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclshim/comm.h"

enum { DEADLINE_MS = 300, INTERVAL_MS = 10, COUNT = 1024 };
static const unsigned long long SPIN_LIMIT_NS = 3000000000ull;

static const ncclshim_nccl_table *T;
static ncclshim_watchdog *dog;
static char nccl_version[32];
static volatile int *flag;  // host-mapped: the spinning kernel's release
static int *flag_device;
static float *sendbuf, *recvbuf;

// What the callback saw (it runs on the watchdog's thread).
static std::atomic<ncclshim_comm *> failed_comm;
static std::atomic<int64_t> failed_at_ns;
static char failed_message[1024];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

static void on_failure(ncclshim_comm *comm, ncclshim_status, const char *message, void *) {
  if (failed_at_ns.load() != 0) return;  // the first failure is the one looked at
  snprintf(failed_message, sizeof(failed_message), "%s", message);
  failed_comm.store(comm);
  failed_at_ns.store(now_ns());  // publishes the two above
}

static void reset_failure(void) {
  failed_at_ns.store(0);
  failed_comm.store((ncclshim_comm *)NULL);
  failed_message[0] = '\0';
}

__global__ void spin(volatile int *release, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*release == 0 && now - start < limit_ns);
}

// A case's outcome: verdict "ok" or "FAIL: why".
typedef struct outcome {
  char verdict[512];
  double ms, limit_ms;
  char detail[512];
} outcome;

#define FAIL_IF(o, cond, ...)                                              \
  do {                                                                     \
    if (cond) {                                                            \
      int n_ = snprintf((o)->verdict, sizeof((o)->verdict), "FAIL: ");     \
      snprintf((o)->verdict + n_, sizeof((o)->verdict) - n_, __VA_ARGS__); \
      return;                                                              \
    }                                                                      \
  } while (0)
#define SHIM_OK(o, call) FAIL_IF(o, (call) != NCCLSHIM_OK, "%s: %s", #call, ncclshim_last_error())
#define CUDA_OK(o, call)                                                  \
  do {                                                                    \
    cudaError_t e_ = (call);                                              \
    FAIL_IF(o, e_ != cudaSuccess, "%s: %s", #call, cudaGetErrorName(e_)); \
  } while (0)

// After a helper that may have failed the case.
#define STOP_IF_FAILED(o)        \
  do {                           \
    if ((o)->verdict[0]) return; \
  } while (0)

// A one-rank watched communicator, READY.
static ncclshim_comm *watched_comm(outcome *o) {
  ncclUniqueId id;
  if (T->ncclGetUniqueId(&id) != ncclSuccess) {
    snprintf(o->verdict, sizeof(o->verdict), "FAIL: ncclGetUniqueId");
    return NULL;
  }
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  ncclshim_comm *comm = NULL;
  if (ncclshim_comm_init(NULL, 1, &id, 0, &options, &comm) != NCCLSHIM_OK ||
      ncclshim_comm_wait(comm, 60000) != NCCLSHIM_OK ||
      ncclshim_comm_watch(comm, dog, DEADLINE_MS) != NCCLSHIM_OK) {
    snprintf(o->verdict, sizeof(o->verdict), "FAIL: communicator: %s", ncclshim_last_error());
    return NULL;
  }
  return comm;
}

// ncclAllReduce on the communicator, checked; then its record unless record == 0.
static ncclshim_status all_reduce(ncclshim_comm *comm, cudaStream_t s, int record) {
  ncclResult_t r =
      T->ncclAllReduce(sendbuf, recvbuf, COUNT, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), s);
  ncclshim_status status = ncclshim_comm_check(comm, r, "ncclAllReduce", 0);
  if (status == NCCLSHIM_OK && record)
    status = ncclshim_comm_record(comm, s, "ncclAllReduce", COUNT, ncclFloat32);
  return status;
}

static void release_spin(int on) { *flag = on; }

// Nothing failed: the communicator READY, no callback, its counts in the detail.
static void healthy(outcome *o, ncclshim_comm *comm, const char *what) {
  FAIL_IF(o, failed_at_ns.load() != 0, "%s: the watchdog failed it: %s", what, failed_message);
  FAIL_IF(o, ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY, "%s: state %d", what,
          (int)ncclshim_comm_state_of(comm));
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  SHIM_OK(o, ncclshim_comm_watch_counts(comm, &c));
  snprintf(o->detail, sizeof(o->detail),
           "recorded %llu captured %llu replays %llu events %llu catch-ups %llu",
           (unsigned long long)c.recorded, (unsigned long long)c.captured,
           (unsigned long long)c.replays, (unsigned long long)c.events,
           (unsigned long long)c.catch_ups);
  snprintf(o->verdict, sizeof(o->verdict), "ok");
}

// Capture `ops` recorded all-reduces on s in `mode`, holding the capture open `hold_ms`
// (the watchdog passes meanwhile); a spinning kernel first when `spin_first`.
static void capture(outcome *o, ncclshim_comm *comm, cudaStream_t s, cudaStreamCaptureMode mode,
                    int ops, int hold_ms, int spin_first, cudaGraphExec_t *exec) {
  cudaGraph_t graph = NULL;
  CUDA_OK(o, cudaStreamBeginCapture(s, mode));
  if (spin_first) spin<<<1, 1, 0, s>>>(flag_device, SPIN_LIMIT_NS);
  for (int i = 0; i < ops; i++) {
    ncclshim_status status = all_reduce(comm, s, 1);
    if (status != NCCLSHIM_OK) {
      cudaStreamEndCapture(s, &graph);
      FAIL_IF(o, 1, "all-reduce or record in the capture: %s", ncclshim_last_error());
    }
  }
  sleep_ms(hold_ms);
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  FAIL_IF(o, e != cudaSuccess, "cudaStreamEndCapture: %s (the capture was invalidated)",
          cudaGetErrorName(e));
  CUDA_OK(o, cudaGraphInstantiate(exec, graph, 0));
  cudaGraphDestroy(graph);
}

static void replay(outcome *o, ncclshim_comm *comm, cudaStream_t s, cudaGraphExec_t exec,
                   const char *label, int ops, int times) {
  for (int i = 0; i < times; i++) {
    CUDA_OK(o, cudaGraphLaunch(exec, s));
    SHIM_OK(o, ncclshim_comm_record_graph(comm, s, label, ops));
  }
}

// 3 replays, each marked; then nothing may have failed.
static void replayed_healthy(outcome *o, ncclshim_comm *comm, cudaStream_t s, cudaGraphExec_t exec,
                             const char *label, int ops, const char *what) {
  replay(o, comm, s, exec, label, ops, 3);
  STOP_IF_FAILED(o);
  CUDA_OK(o, cudaStreamSynchronize(s));
  cudaGraphExecDestroy(exec);
  sleep_ms(3 * INTERVAL_MS);
  healthy(o, comm, what);
}

static void capture_global_pending(outcome *o, ncclshim_comm *comm, cudaStream_t s) {
  release_spin(0);
  spin<<<1, 1, 0, s>>>(flag_device, SPIN_LIMIT_NS);  // keeps what follows pending
  for (int i = 0; i < 3; i++) SHIM_OK(o, all_reduce(comm, s, 1));
  cudaGraphExec_t exec = NULL;
  cudaGraph_t graph = NULL;
  CUDA_OK(o, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ncclshim_status status = all_reduce(comm, s, 1);
  sleep_ms(50);
  release_spin(1);  // the pending work finishes during the capture
  sleep_ms(2 * DEADLINE_MS);
  cudaError_t e = cudaStreamEndCapture(s, &graph);
  FAIL_IF(o, status != NCCLSHIM_OK, "all-reduce or record in the capture: %s",
          ncclshim_last_error());
  FAIL_IF(o, e != cudaSuccess, "cudaStreamEndCapture: %s (the capture was invalidated)",
          cudaGetErrorName(e));
  CUDA_OK(o, cudaGraphInstantiate(&exec, graph, 0));
  replay(o, comm, s, exec, "global-pending", 1, 1);
  STOP_IF_FAILED(o);
  CUDA_OK(o, cudaStreamSynchronize(s));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  healthy(o, comm, "after the capture");
}

// Until the watchdog knows every recorded operation done (bounded); 1 then.
static int settled(ncclshim_comm *comm, int limit_ms) {
  int64_t until = now_ns() + (int64_t)limit_ms * 1000000;
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  while (ncclshim_comm_watch_counts(comm, &c) == NCCLSHIM_OK && now_ns() < until) {
    if (c.outstanding == 0) return 1;
    usleep(500);
  }
  return 0;
}

static void capture_threadlocal(outcome *o, ncclshim_comm *comm, cudaStream_t s) {
  SHIM_OK(o, all_reduce(comm, s, 1));
  CUDA_OK(o, cudaStreamSynchronize(s));
  // Nothing pending: each record in the capture asks the driver, and counts it captured.
  FAIL_IF(o, !settled(comm, 1000), "the first all-reduce is still outstanding after 1 s");
  cudaGraphExec_t exec = NULL;
  capture(o, comm, s, cudaStreamCaptureModeThreadLocal, 3, 2 * DEADLINE_MS, 0, &exec);
  STOP_IF_FAILED(o);
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  SHIM_OK(o, ncclshim_comm_watch_counts(comm, &c));
  FAIL_IF(o, c.captured != 3, "%llu records counted as captured, not 3",
          (unsigned long long)c.captured);
  replayed_healthy(o, comm, s, exec, "thread-local", 3, "after 3 replays");
}

static void replay_watched_ok(outcome *o, ncclshim_comm *comm, cudaStream_t s) {
  cudaGraphExec_t exec = NULL;
  capture(o, comm, s, cudaStreamCaptureModeThreadLocal, 2, 0, 0, &exec);
  STOP_IF_FAILED(o);
  sleep_ms(2 * DEADLINE_MS);  // long after the capture
  replayed_healthy(o, comm, s, exec, "decode", 2, "after 3 late replays");
}

// Wait (bounded) for the callback; its time, or 0.
static int64_t wait_for_failure(int limit_ms) {
  int64_t until = now_ns() + (int64_t)limit_ms * 1000000;
  while (failed_at_ns.load() == 0 && now_ns() < until) usleep(200);
  return failed_at_ns.load();
}

static void replay_hang_detected(outcome *o, ncclshim_comm *comm, cudaStream_t s) {
  release_spin(0);
  cudaGraphExec_t exec = NULL;
  capture(o, comm, s, cudaStreamCaptureModeThreadLocal, 1, 0, 1, &exec);
  STOP_IF_FAILED(o);
  CUDA_OK(o, cudaGraphLaunch(exec, s));
  int64_t t0 = now_ns();
  SHIM_OK(o, ncclshim_comm_record_graph(comm, s, "hang", 1));
  int64_t at = wait_for_failure(2 * DEADLINE_MS + 1000);
  release_spin(1);
  o->limit_ms = (DEADLINE_MS + INTERVAL_MS) * 1.1;
  FAIL_IF(o, at == 0, "no failure within %d ms", 2 * DEADLINE_MS + 1000);
  o->ms = (double)(at - t0) / 1e6;
  snprintf(o->detail, sizeof(o->detail), "%.200s", failed_message);
  ncclshim_status status = ncclshim_comm_record(comm, s, "ncclAllReduce", 1, ncclFloat32);
  FAIL_IF(o, failed_comm.load() != comm, "another communicator failed");
  FAIL_IF(o, status != NCCLSHIM_TIMEOUT, "the next record answered %s, not TIMEOUT",
          ncclshim_status_name(status));
  FAIL_IF(o, strstr(failed_message, "CUDA graph \"hang\" (1 collectives)") == NULL,
          "the message does not name the graph: %s", failed_message);
  FAIL_IF(o, o->ms < DEADLINE_MS || o->ms > o->limit_ms, "detected in %.1f ms", o->ms);
  SHIM_OK(o, ncclshim_comm_abort(comm, 10000));
  cudaStreamSynchronize(s);
  cudaGraphExecDestroy(exec);
  snprintf(o->verdict, sizeof(o->verdict), "ok");
}

static void isolation(outcome *o, ncclshim_comm *hung, cudaStream_t s) {
  ncclshim_comm *other = watched_comm(o);
  if (other == NULL) return;
  cudaStream_t s2;
  CUDA_OK(o, cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  release_spin(0);
  spin<<<1, 1, 0, s>>>(flag_device, SPIN_LIMIT_NS);
  SHIM_OK(o, all_reduce(hung, s, 1));
  int64_t t0 = now_ns();
  int done = 0;
  while (failed_at_ns.load() == 0 && now_ns() - t0 < 3 * (int64_t)DEADLINE_MS * 1000000) {
    SHIM_OK(o, all_reduce(other, s2, 1));
    CUDA_OK(o, cudaStreamSynchronize(s2));
    done++;
  }
  for (int i = 0; i < 20; i++) {  // and after the failure
    SHIM_OK(o, all_reduce(other, s2, 1));
    CUDA_OK(o, cudaStreamSynchronize(s2));
    done++;
  }
  int64_t at = failed_at_ns.load();
  release_spin(1);
  o->limit_ms = (DEADLINE_MS + INTERVAL_MS) * 1.1;
  FAIL_IF(o, at == 0, "the hung communicator was not failed");
  o->ms = (double)(at - t0) / 1e6;
  FAIL_IF(o, failed_comm.load() != hung, "the wrong communicator failed: %s", failed_message);
  FAIL_IF(o, ncclshim_comm_state_of(other) != NCCLSHIM_COMM_READY, "the other one is not READY");
  FAIL_IF(o, ncclshim_comm_failure(other)[0] != '\0', "the other one failed");
  snprintf(o->detail, sizeof(o->detail), "%d all-reduces on the other one meanwhile", done);
  SHIM_OK(o, ncclshim_comm_abort(hung, 10000));
  cudaStreamSynchronize(s);
  SHIM_OK(o, ncclshim_comm_destroy(other, 10000));
  ncclshim_comm_free(other);
  cudaStreamDestroy(s2);
  snprintf(o->verdict, sizeof(o->verdict), "ok");
}

typedef void (*case_fn)(outcome *o, ncclshim_comm *comm, cudaStream_t s);
static const struct {
  const char *name;
  case_fn run;
} cases[] = {
    {"capture-global-pending", capture_global_pending},
    {"capture-threadlocal", capture_threadlocal},
    {"replay-watched-ok", replay_watched_ok},
    {"replay-hang-detected", replay_hang_detected},
    {"isolation", isolation},
};

static int run_case(int i) {
  outcome o;
  memset(&o, 0, sizeof(o));
  reset_failure();
  int64_t start = now_ns();
  ncclshim_comm *comm = watched_comm(&o);
  cudaStream_t s;
  if (comm != NULL && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
    cases[i].run(&o, comm, s);
    release_spin(1);
    cudaStreamSynchronize(s);
    if (ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY)
      ncclshim_comm_destroy(comm, 10000);
    else
      ncclshim_comm_abort(comm, 10000);
    ncclshim_comm_free(comm);
    cudaStreamDestroy(s);
  }
  if (o.ms == 0 && strcmp(o.verdict, "ok") == 0) o.ms = (double)(now_ns() - start) / 1e6;
  for (char *c = o.detail; *c; c++)
    if (*c == ',' || *c == '\n') *c = ';';
  for (char *c = o.verdict; *c; c++)
    if (*c == ',' || *c == '\n') *c = ';';
  printf("%s,%s,%s,%.1f,%.1f,%s\n", cases[i].name, o.verdict, nccl_version, o.ms, o.limit_ms,
         o.detail);
  fflush(stdout);
  return strcmp(o.verdict, "ok") == 0;
}

int main(int argc, char **argv) {
  alarm(80);  // nothing outlives the part
  if (ncclshim_init() != NCCLSHIM_OK) {
    fprintf(stderr, "graphs: no NCCL: %s\n", ncclshim_last_error());
    return 2;
  }
  T = ncclshim_table();
  int v = ncclshim_version();
  snprintf(nccl_version, sizeof(nccl_version), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess) {
    fprintf(stderr, "graphs: no GPU\n");
    return 2;
  }
  int *host = NULL;
  if (cudaHostAlloc((void **)&host, sizeof(int), cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer((void **)&flag_device, host, 0) != cudaSuccess ||
      cudaMalloc((void **)&sendbuf, COUNT * sizeof(float)) != cudaSuccess ||
      cudaMalloc((void **)&recvbuf, COUNT * sizeof(float)) != cudaSuccess) {
    fprintf(stderr, "graphs: buffers\n");
    return 2;
  }
  flag = host;
  cudaMemset(sendbuf, 0, COUNT * sizeof(float));
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  options.interval_ms = INTERVAL_MS;
  options.on_failure = on_failure;
  if (ncclshim_watchdog_start(&options, &dog) != NCCLSHIM_OK) {
    fprintf(stderr, "graphs: watchdog: %s\n", ncclshim_last_error());
    return 2;
  }
  int all = 1, ran = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    all &= run_case((int)i);
    ran++;
  }
  ncclshim_watchdog_stop(dog);
  if (ran == 0) fprintf(stderr, "graphs: no case %s\n", argv[1]);
  return all && ran > 0 ? 0 : 1;
}
