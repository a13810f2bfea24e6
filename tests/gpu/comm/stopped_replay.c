/* A rank stopped inside a CUDA-graph replay, on two GPUs, run by
 * tests/gpu/comm/acceptance2.sh:
 *   stopped_replay DEADLINE_MS
 * Two processes, one per GPU (forked before any CUDA call; rank 0's unique id goes down a
 * pipe), each with a split-blocking communicator watched with DEADLINE_MS and a 10 ms
 * interval. Each captures one all-reduce (rank r sends r + 1) in a graph, replays it 3 times
 * with ncclshim_comm_record_graph and checks every result (3). Then rank 1 stops itself
 * (SIGSTOP: a hung peer, alive and silent), the parent sees it stopped and lets rank 0 replay
 * once more: rank 0's watchdog must fail the communicator within DEADLINE_MS ..
 * (DEADLINE_MS + interval) * 1.1 of that replay's record, naming the graph, abort it so that
 * the stream is released, and rank 0 must exit 0 by itself. The parent then continues and
 * kills the stopped rank and reaps both. Rank 0 prints
 *   detected_ms=MS limit_ms=MS released_ms=MS
 * and the parent rank0_exit=N (0: ok); exit status 0 only when all held. Every child has an
 * alarm: nothing outlives the run. */
#define _GNU_SOURCE /* clock_gettime, usleep, kill under -std=c11 */
#include <cuda_runtime.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ncclshim/comm.h"
#include "ncclshim/watchdog.h"
#include "fail_line.h"

enum { NRANKS = 2, INTERVAL_MS = 10, COUNT = 1 << 20, REPLAYS = 3 };
static int rank;
static int id_pipe[2], go_pipe[2];
static _Atomic int64_t failed_at_ns;
static char failed_message[512];

#define CHECK(ok, ...) CHECK_OR(exit(1), "rank", rank, ok, __VA_ARGS__)
#define SHIM(call) CHECK((call) == NCCLSHIM_OK, "%s: %s", #call, ncclshim_last_error())
#define CUDA(call)                                                   \
  do {                                                               \
    cudaError_t e_ = (call);                                         \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorName(e_)); \
  } while (0)

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_failure(ncclshim_comm *comm, ncclshim_status status, const char *message,
                       void *user) {
  (void)comm, (void)status, (void)user;
  if (atomic_load(&failed_at_ns) != 0) return;
  snprintf(failed_message, sizeof(failed_message), "%s", message);
  atomic_store(&failed_at_ns, now_ns()); /* publishes the message */
}

/* 1 when the stream is idle within limit_ms (the watchdog's abort should release it). */
static int drain(cudaStream_t s, int limit_ms) {
  int64_t limit = now_ns() + (int64_t)limit_ms * 1000000;
  cudaError_t q;
  while ((q = cudaStreamQuery(s)) == cudaErrorNotReady && now_ns() < limit) usleep(100);
  return q != cudaErrorNotReady;
}

static ncclshim_comm *watched_comm(ncclshim_watchdog *dog, int deadline_ms) {
  const ncclshim_nccl_table *t = ncclshim_table();
  ncclUniqueId id;
  if (rank == 0) {
    CHECK(t->ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    CHECK(write(id_pipe[1], &id, sizeof(id)) == sizeof(id), "pipe");
  } else {
    CHECK(read(id_pipe[0], &id, sizeof(id)) == sizeof(id), "pipe");
  }
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  ncclshim_comm *comm = NULL;
  SHIM(ncclshim_comm_init(NULL, NRANKS, &id, rank, &options, &comm));
  SHIM(ncclshim_comm_wait(comm, 60000));
  SHIM(ncclshim_comm_watch(comm, dog, deadline_ms));
  return comm;
}

static cudaGraphExec_t capture_all_reduce(ncclshim_comm *comm, cudaStream_t s, float *send,
                                          float *recv) {
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  ncclResult_t r = ncclshim_table()->ncclAllReduce(send, recv, COUNT, ncclFloat32, ncclSum,
                                                   ncclshim_comm_raw(comm), s);
  ncclshim_status status = ncclshim_comm_check(comm, r, "ncclAllReduce", 0);
  if (status == NCCLSHIM_OK)
    status = ncclshim_comm_record(comm, s, "ncclAllReduce", COUNT, ncclFloat32);
  CUDA(cudaStreamEndCapture(s, &graph));
  CHECK(status == NCCLSHIM_OK, "all-reduce in the capture: %s", ncclshim_last_error());
  CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaGraphDestroy(graph);
  return exec;
}

static int child(int deadline_ms) {
  alarm(60);
  SHIM(ncclshim_init());
  CUDA(cudaSetDevice(rank));
  CUDA(cudaFree(NULL));
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *send, *recv, *host = malloc(COUNT * sizeof(float));
  CHECK(host != NULL, "malloc");
  CUDA(cudaMalloc((void **)&send, COUNT * sizeof(float)));
  CUDA(cudaMalloc((void **)&recv, COUNT * sizeof(float)));
  for (int i = 0; i < COUNT; i++) host[i] = (float)(rank + 1);
  CUDA(cudaMemcpy(send, host, COUNT * sizeof(float), cudaMemcpyHostToDevice));
  ncclshim_watchdog_options wo = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  wo.interval_ms = INTERVAL_MS;
  wo.on_failure = on_failure;
  ncclshim_watchdog *dog = NULL;
  SHIM(ncclshim_watchdog_start(&wo, &dog));
  ncclshim_comm *comm = watched_comm(dog, deadline_ms);
  cudaGraphExec_t exec = capture_all_reduce(comm, s, send, recv);
  for (int i = 0; i < REPLAYS; i++) {
    CUDA(cudaMemsetAsync(recv, 0, COUNT * sizeof(float), s));
    CUDA(cudaGraphLaunch(exec, s));
    SHIM(ncclshim_comm_record_graph(comm, s, "allreduce", 1));
    CHECK(drain(s, 20000), "replay %d did not finish", i + 1);
    CUDA(cudaMemcpy(host, recv, COUNT * sizeof(float), cudaMemcpyDeviceToHost));
    for (int k = 0; k < COUNT; k++)
      CHECK(host[k] == 3.0f, "replay %d: element %d is %g, not 3", i + 1, k, (double)host[k]);
  }
  CHECK(atomic_load(&failed_at_ns) == 0, "the watchdog failed a healthy replay: %s",
        failed_message);
  if (rank == 1) {
    raise(SIGSTOP); /* the parent continues it only to kill it */
    return 0;
  }
  char go;
  CHECK(read(go_pipe[0], &go, 1) == 1, "no go from the parent");
  CUDA(cudaGraphLaunch(exec, s));
  int64_t t0 = now_ns();
  SHIM(ncclshim_comm_record_graph(comm, s, "allreduce", 1));
  int idle = drain(s, deadline_ms + 20000); /* as cudaStreamSynchronize, but bounded */
  int64_t at = atomic_load(&failed_at_ns);
  CHECK(at != 0, "no watchdog failure (stream idle %d)", idle);
  double detected = (double)(at - t0) / 1e6, limit = (deadline_ms + INTERVAL_MS) * 1.1;
  double released = idle ? (double)(now_ns() - at) / 1e6 : -1.0;
  printf("detected_ms=%.1f limit_ms=%.1f released_ms=%.1f\n", detected, limit, released);
  fflush(stdout);
  CHECK(detected >= deadline_ms && detected <= limit, "detected after %.1f ms", detected);
  CHECK(idle, "the stream was not released after the watchdog's abort");
  CHECK(strstr(failed_message, "CUDA graph \"allreduce\"") != NULL,
        "the message does not name the graph: %s", failed_message);
  ncclshim_status status = ncclshim_comm_record_graph(comm, s, "allreduce", 1);
  CHECK(status == NCCLSHIM_TIMEOUT, "after the failure a record answered %s, not TIMEOUT",
        ncclshim_status_name(status));
  CHECK(ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY, "still READY after the failure");
  cudaGraphExecDestroy(exec);
  ncclshim_comm_abort(comm, 10000); /* the watchdog aborted it already: this only frees */
  ncclshim_comm_free(comm);
  SHIM(ncclshim_watchdog_stop(dog));
  fprintf(stderr, "rank 0: %s\n", failed_message);
  return 0;
}

int main(int argc, char **argv) {
  int deadline_ms = argc == 2 ? atoi(argv[1]) : 0;
  if (deadline_ms < 1) {
    fprintf(stderr, "usage: %s DEADLINE_MS\n", argv[0]);
    return 2;
  }
  CHECK(pipe(id_pipe) == 0 && pipe(go_pipe) == 0, "pipe");
  pid_t pids[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    if ((pids[r] = fork()) == 0) {
      rank = r;
      exit(child(deadline_ms));
    }
  }
  int status, failed = 0;
  /* Rank 1 stops itself after its replays (or exits early, having failed). */
  CHECK(waitpid(pids[1], &status, WUNTRACED) == pids[1], "waitpid");
  if (WIFSTOPPED(status)) {
    CHECK(write(go_pipe[1], "g", 1) == 1, "pipe");
  } else {
    fprintf(stderr, "rank 1 ended before stopping (status 0x%x)\n", status);
    failed = 1;
    kill(pids[0], SIGKILL);
  }
  waitpid(pids[0], &status, 0);
  int rank0_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  printf("rank0_exit=%d\n", rank0_exit);
  failed |= rank0_exit != 0;
  kill(pids[1], SIGKILL);
  kill(pids[1], SIGCONT);
  waitpid(pids[1], &status, 0);
  return failed;
}
