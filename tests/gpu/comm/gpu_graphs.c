/* The watchdog and CUDA graphs on one GPU, plain C: a one-rank split-blocking
 * communicator watched with a 300 ms deadline. The capture and graph functions, which
 * ncclshim's list does not bind, come from the loaded libcuda.so.1 by their exported names;
 * a "hang" is a cuStreamWaitValue32 on host-mapped memory before the all-reduce, which this
 * process releases on every path (and a timer thread after 3 s at the latest), so that the
 * abort the watchdog starts is never left waiting for it.
 *   1. global-mode capture begun while recorded work is pending, held open twice the
 *      deadline: it ends without invalidation, and nothing fails;
 *   2. a thread-local capture of recorded all-reduces, replayed 3 times twice the deadline
 *      after the capture: nothing fails;
 *   3. a replay whose all-reduce waits on the flag: failed within (deadline + interval) *
 *      1.1, the message naming the graph and its collectives. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_common.h"

enum { DEADLINE_MS = 300, INTERVAL_MS = 10, COUNT = 1024, RELEASE_AFTER_MS = 3000 };
enum { GLOBAL = 0, THREAD_LOCAL = 1, DEVICEMAP = 2, WAIT_GEQ = 0 };

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
static struct {
  ncclshim_cu_result (*begin)(CUstream, int);
  ncclshim_cu_result (*end)(CUstream, CUgraph *);
  ncclshim_cu_result (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  ncclshim_cu_result (*launch)(CUgraphExec, CUstream);
  ncclshim_cu_result (*exec_destroy)(CUgraphExec);
  ncclshim_cu_result (*destroy)(CUgraph);
  ncclshim_cu_result (*host_alloc)(void **, size_t, unsigned int);
  ncclshim_cu_result (*host_pointer)(CUdeviceptr *, void *, unsigned int);
  ncclshim_cu_result (*wait_value)(CUstream, CUdeviceptr, uint32_t, unsigned int);
} cu;

static volatile uint32_t *flag;
static CUdeviceptr flag_device, sendbuf, recvbuf;
static atomic_llong failed_at_ms;
static char failed_message[1024];

static void on_failure(ncclshim_comm *comm, ncclshim_status status, const char *message,
                       void *user) {
  (void)comm, (void)status, (void)user;
  snprintf(failed_message, sizeof(failed_message), "%s", message);
  atomic_store(&failed_at_ms, gpu_now_ms()); /* publishes the message */
}

static int bind_graphs(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == NULL) return 0;
#define BIND(field, name) (*(void **)&cu.field = dlsym(lib, name)) != NULL
  return BIND(begin, "cuStreamBeginCapture_v2") && BIND(end, "cuStreamEndCapture") &&
         BIND(instantiate, "cuGraphInstantiateWithFlags") && BIND(launch, "cuGraphLaunch") &&
         BIND(exec_destroy, "cuGraphExecDestroy") && BIND(destroy, "cuGraphDestroy") &&
         BIND(host_alloc, "cuMemHostAlloc") && BIND(host_pointer, "cuMemHostGetDevicePointer_v2") &&
         BIND(wait_value, "cuStreamWaitValue32_v2");
#undef BIND
}

/* The safety release: no wait outlives RELEASE_AFTER_MS, whatever the test does. */
static void *release_later(void *arg) {
  (void)arg;
  for (;;) {
    uint32_t armed = *flag;
    usleep(RELEASE_AFTER_MS * 1000);
    if (*flag == armed) *flag = armed + 1;
  }
  return NULL;
}

/* Enqueue a wait until the flag passes its current value; release() lets it go. */
static int hold(gpu_rank *r, CUstream s) {
  GPU_CU(r, cu.wait_value(s, flag_device, *flag + 1, WAIT_GEQ));
  return GPU_PASS;
}
static void release(void) { *flag = *flag + 1; }

static int all_reduce(gpu_rank *r, ncclshim_comm *comm, CUstream s) {
  ncclResult_t rc = r->t->ncclAllReduce((void *)sendbuf, (void *)recvbuf, COUNT, ncclFloat32,
                                        ncclSum, ncclshim_comm_raw(comm), s);
  GPU_OK(r, ncclshim_comm_check(comm, rc, "ncclAllReduce", 0));
  GPU_OK(r, ncclshim_comm_record(comm, s, "ncclAllReduce", COUNT, ncclFloat32));
  return GPU_PASS;
}

/* The work done, wait (bounded) until the watchdog has seen it done, not for a time: then
 * nothing may have failed. */
static int healthy(gpu_rank *r, ncclshim_comm *comm, const char *when) {
  GPU_CU(r, r->cu->cuStreamSynchronize(r->stream));
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  int64_t until = gpu_now_ms() + 2 * DEADLINE_MS + 1000;
  while (ncclshim_comm_watch_counts(comm, &c) == NCCLSHIM_OK && c.outstanding > 0 &&
         atomic_load(&failed_at_ms) == 0 && gpu_now_ms() < until)
    usleep(200);
  GPU_CHECK(r, atomic_load(&failed_at_ms) == 0, "%s: failed: %s", when, failed_message);
  GPU_CHECK(r, c.outstanding == 0, "%s: %llu operations never seen done", when,
            (unsigned long long)c.outstanding);
  GPU_CHECK(r, ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY, "%s: not READY", when);
  return GPU_PASS;
}

static int capture_global_pending(gpu_rank *r, ncclshim_comm *comm) {
  CUstream s = r->stream;
  if (hold(r, s) != GPU_PASS || all_reduce(r, comm, s) != GPU_PASS) return GPU_FAIL;
  GPU_CU(r, cu.begin(s, GLOBAL));
  int ok = all_reduce(r, comm, s);
  usleep(50 * 1000);
  release(); /* the pending work finishes during the capture */
  usleep(2 * DEADLINE_MS * 1000);
  CUgraph graph = NULL;
  ncclshim_cu_result ended = cu.end(s, &graph);
  GPU_CHECK(r, ok == GPU_PASS, "the all-reduce or record in the capture failed");
  GPU_CHECK(r, ended == 0, "cuStreamEndCapture: %d (the capture was invalidated)", ended);
  CUgraphExec exec = NULL;
  GPU_CU(r, cu.instantiate(&exec, graph, 0));
  GPU_CU(r, cu.launch(exec, s));
  GPU_OK(r, ncclshim_comm_record_graph(comm, s, "global-pending", 1));
  if (healthy(r, comm, "after a global capture") != GPU_PASS) return GPU_FAIL;
  cu.exec_destroy(exec);
  cu.destroy(graph);
  printf("capture-global-pending: ok\n");
  return GPU_PASS;
}

static int capture(gpu_rank *r, ncclshim_comm *comm, int wait_first, CUgraphExec *exec) {
  CUstream s = r->stream;
  GPU_CU(r, cu.begin(s, THREAD_LOCAL));
  int ok = (!wait_first || hold(r, s) == GPU_PASS) && all_reduce(r, comm, s) == GPU_PASS;
  CUgraph graph = NULL;
  GPU_CU(r, cu.end(s, &graph));
  GPU_CHECK(r, ok, "the all-reduce or record in the capture failed");
  GPU_CU(r, cu.instantiate(exec, graph, 0));
  cu.destroy(graph);
  return GPU_PASS;
}

static int replays(gpu_rank *r, ncclshim_comm *comm) {
  CUgraphExec exec = NULL;
  if (capture(r, comm, 0, &exec) != GPU_PASS) return GPU_FAIL;
  usleep(2 * DEADLINE_MS * 1000); /* long after the capture */
  for (int i = 0; i < 3; i++) {
    GPU_CU(r, cu.launch(exec, r->stream));
    GPU_OK(r, ncclshim_comm_record_graph(comm, r->stream, "late", 1));
  }
  if (healthy(r, comm, "after 3 late replays") != GPU_PASS) return GPU_FAIL;
  cu.exec_destroy(exec);
  printf("replay-watched-ok: ok\n");
  return GPU_PASS;
}

static int replay_hang(gpu_rank *r, ncclshim_comm *comm) {
  CUgraphExec exec = NULL;
  if (capture(r, comm, 1, &exec) != GPU_PASS) return GPU_FAIL;
  GPU_CU(r, cu.launch(exec, r->stream));
  int64_t t0 = gpu_now_ms();
  GPU_OK(r, ncclshim_comm_record_graph(comm, r->stream, "hang", 1));
  while (atomic_load(&failed_at_ms) == 0 && gpu_now_ms() - t0 < 2 * DEADLINE_MS + 1000) usleep(200);
  int64_t at = atomic_load(&failed_at_ms);
  release();
  double limit = (DEADLINE_MS + INTERVAL_MS) * 1.1;
  GPU_CHECK(r, at != 0, "the hung replay was not detected");
  GPU_CHECK(r, at - t0 >= DEADLINE_MS && at - t0 <= limit, "detected after %lld ms (limit %.0f)",
            (long long)(at - t0), limit);
  GPU_CHECK(r, strstr(failed_message, "CUDA graph \"hang\" (1 collectives)") != NULL,
            "the message does not name the graph: %s", failed_message);
  GPU_OK(r, ncclshim_comm_abort(comm, 10000));
  r->cu->cuStreamSynchronize(r->stream);
  cu.exec_destroy(exec);
  printf("replay-hang-detected: ok, after %lld ms (limit %.0f)\n", (long long)(at - t0), limit);
  return GPU_PASS;
}

int main(void) {
  gpu_require(1);
  alarm(60);
  gpu_rank r = {.rank = 0, .nranks = 1};
  if (gpu_open(&r, 0) != GPU_PASS) return GPU_FAIL;
  if (!bind_graphs()) {
    printf("skip: this driver lacks the graph functions (CUDA 12.0+)\n");
    return GPU_SKIP;
  }
  void *host = NULL;
  GPU_CU(&r, cu.host_alloc(&host, sizeof(uint32_t), DEVICEMAP));
  flag = host;
  *flag = 0;
  GPU_CU(&r, cu.host_pointer(&flag_device, host, 0));
  GPU_CU(&r, r.cu->cuMemAlloc(&sendbuf, COUNT * sizeof(float)));
  GPU_CU(&r, r.cu->cuMemAlloc(&recvbuf, COUNT * sizeof(float)));
  GPU_CU(&r, r.cu->cuMemsetD8(sendbuf, 0, COUNT * sizeof(float)));
  pthread_t timer;
  GPU_CHECK(&r, pthread_create(&timer, NULL, release_later, NULL) == 0, "timer thread");
  pthread_detach(timer);
  ncclshim_watchdog_options wo = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  wo.interval_ms = INTERVAL_MS;
  wo.on_failure = on_failure;
  ncclshim_watchdog *dog = NULL;
  GPU_OK(&r, ncclshim_watchdog_start(&wo, &dog));
  GPU_OK(&r, ncclshim_nccl_check(r.nccl, r.t->ncclGetUniqueId(&r.id), "ncclGetUniqueId"));
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  ncclshim_comm *comm = NULL;
  GPU_OK(&r, ncclshim_comm_init(r.nccl, 1, &r.id, 0, &options, &comm));
  GPU_OK(&r, ncclshim_comm_wait(comm, 60000));
  GPU_OK(&r, ncclshim_comm_watch(comm, dog, DEADLINE_MS));
  int rc = capture_global_pending(&r, comm);
  if (rc == GPU_PASS) rc = replays(&r, comm);
  if (rc == GPU_PASS) rc = replay_hang(&r, comm);
  release();
  if (ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY) ncclshim_comm_abort(comm, 10000);
  ncclshim_comm_free(comm);
  GPU_OK(&r, ncclshim_watchdog_stop(dog));
  return rc;
}
