/* Two facts of the real driver that the tracker's design rests on (bench/gpu/run.sh, stage
 * driverfacts).
 *
 * 1. Captures. What the driver does with an event recorded while its stream captures, seen
 * from a second thread that queries it, as the tracker's look would. It decides whether a
 * record may skip its capture check
 * (cuStreamIsCapturing): it may only if a look that queries a captured event, in the capture
 * mode the look runs under, neither breaks the program's capture nor gets an answer it
 * could take for a completion or a failure.
 *
 * For each capture mode of the capturing thread, each mode of the querying thread and each
 * event it queries (`plain`: one completed before the capture; `captured`: the one recorded
 * in it), on a non-blocking stream: begin a capture, enqueue a memset, record an event; the
 * other thread queries its event once; end the capture, instantiate, launch, synchronize;
 * query the captured event again, record it anew outside any capture and query it after a
 * synchronize (can a pool reuse it?). Then the cost of a record with and without the capture
 * check, idle, on that stream and on the two default ones.
 *
 * 2. Handles. The look infers that an event completed only from events of the same stream
 * handle; that holds if a destroyed stream's handle is not given to a new stream while its
 * work is pending. A stream is held by a cuStreamWaitValue32 on host-mapped memory and
 * destroyed; 64 streams are created: is one of them the old handle? Then the flag is set,
 * the device synchronized and the 64 streams destroyed, and a new stream made again.
 * Prints CSV rows
 *   facts,capture_mode,look_mode,queried,record,query,end,launch,query_after,reuse_record,
 *         reuse_query
 *   cost,stream,what,ns   (median of 200 rounds of 1000 calls; three turns)
 *   handle,while,reused   (while the destroyed stream's work is pending, after it ended)
 * the CUresult numbers as the driver gives them. Usage: driver_facts (device 0). */
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Each step under its own alarm: a driver call that never returns names its step and ends
 * the program, the rows before it printed (stdout is line-buffered). */
static const char *volatile step = "start";
static void stuck(int sig) {
  (void)sig;
  static const char head[] = "driver_facts: no answer within 20 s at: ";
  if (write(2, head, sizeof(head) - 1) < 0 || write(2, step, strlen(step)) < 0 ||
      write(2, "\n", 1) < 0)
    _exit(4);
  _exit(3);
}
static void begin(const char *what) {
  step = what;
  fprintf(stderr, "%s\n", what);
  alarm(20);
}

#define CHECK(call)                                                       \
  do {                                                                    \
    CUresult r_ = (call);                                                 \
    if (r_ != CUDA_SUCCESS) {                                             \
      fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, r_); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

static const char *const mode_names[] = {"global", "thread_local", "relaxed"};

typedef struct look {
  CUcontext ctx;
  CUstreamCaptureMode mode;
  CUevent event;
  CUresult query;
} look;

static void *look_once(void *arg) {
  look *l = arg;
  CHECK(cuCtxSetCurrent(l->ctx));
  CUstreamCaptureMode mode = l->mode;
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  l->query = cuEventQuery(l->event);
  CHECK(cuThreadExchangeStreamCaptureMode(&mode));
  return NULL;
}

static void facts(CUcontext ctx, CUstream s, CUdeviceptr buffer, CUstreamCaptureMode capture,
                  CUstreamCaptureMode look_mode, int query_captured) {
  static char what[96];
  snprintf(what, sizeof(what), "facts %s capture, %s look, %s event", mode_names[capture],
           mode_names[look_mode], query_captured ? "captured" : "plain");
  begin(what);
  CUevent plain, captured;
  CHECK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventCreate(&captured, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventRecord(plain, s));
  CHECK(cuStreamSynchronize(s));
  look l = {.ctx = ctx, .mode = look_mode, .event = query_captured ? captured : plain};
  CHECK(cuStreamBeginCapture(s, capture));
  CHECK(cuMemsetD32Async(buffer, 1, 1024, s));
  CUresult record = cuEventRecord(captured, s);
  pthread_t thread;
  if (pthread_create(&thread, NULL, look_once, &l) != 0) exit(1);
  pthread_join(thread, NULL);
  CUgraph graph = NULL;
  CUresult end = cuStreamEndCapture(s, &graph);
  CUresult launch = CUDA_ERROR_UNKNOWN;
  if (end == CUDA_SUCCESS) {
    CUgraphExec exec;
    launch = cuGraphInstantiate(&exec, graph, 0);
    if (launch == CUDA_SUCCESS) {
      launch = cuGraphLaunch(exec, s);
      CHECK(cuStreamSynchronize(s));
      CHECK(cuGraphExecDestroy(exec));
    }
    CHECK(cuGraphDestroy(graph));
  }
  CUresult after = cuEventQuery(captured);
  CUresult reuse_record = cuEventRecord(captured, s);
  CHECK(cuStreamSynchronize(s));
  CUresult reuse_query = cuEventQuery(captured);
  printf("facts,%s,%s,%s,%d,%d,%d,%d,%d,%d,%d\n", mode_names[capture], mode_names[look_mode],
         query_captured ? "captured" : "plain", record, l.query, end, launch, after, reuse_record,
         reuse_query);
  CHECK(cuEventDestroy(plain));
  CHECK(cuEventDestroy(captured));
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median ns per record of 200 rounds of 1000, with or without the capture check first. */
static double record_ns(CUstream s, CUevent e, int check) {
  enum { ROUNDS = 200, CALLS = 1000 };
  static double per[ROUNDS];
  for (int round = 0; round < ROUNDS; round++) {
    double start = now_ns();
    for (int i = 0; i < CALLS; i++) {
      CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
      if (check) CHECK(cuStreamIsCapturing(s, &status));
      if (status == CU_STREAM_CAPTURE_STATUS_NONE) CHECK(cuEventRecord(e, s));
    }
    per[round] = (now_ns() - start) / CALLS;
    CHECK(cuStreamSynchronize(s));
  }
  qsort(per, ROUNDS, sizeof(per[0]), by_value);
  return per[ROUNDS / 2];
}

/* Whether a stream destroyed with work pending gives its handle to a new stream before
 * that work ends, and after. */
static void handle_reuse(void) {
  enum { NEW = 64 };
  unsigned *flag;
  CUdeviceptr flag_on_device;
  CUstream held, made[NEW];
  CHECK(cuMemHostAlloc((void **)&flag, sizeof(*flag), CU_MEMHOSTALLOC_DEVICEMAP));
  *flag = 0;
  CHECK(cuMemHostGetDevicePointer(&flag_on_device, flag, 0));
  CHECK(cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamWaitValue32(held, flag_on_device, 1, CU_STREAM_WAIT_VALUE_GEQ));
  CUstream old = held;
  CHECK(cuStreamDestroy(held));
  int reused = 0;
  for (int i = 0; i < NEW; i++) {
    CHECK(cuStreamCreate(&made[i], CU_STREAM_NON_BLOCKING));
    reused += made[i] == old;
  }
  printf("handle,pending,%d\n", reused);
  *(volatile unsigned *)flag = 1;
  CHECK(cuCtxSynchronize());
  for (int i = 0; i < NEW; i++) CHECK(cuStreamDestroy(made[i]));
  CUstream again;
  CHECK(cuStreamCreate(&again, CU_STREAM_NON_BLOCKING));
  printf("handle,ended,%d\n", again == old);
  CHECK(cuStreamDestroy(again));
  CHECK(cuMemFreeHost(flag));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, stuck);
  CUdevice device;
  CUcontext ctx;
  CUstream s;
  CUdeviceptr buffer;
  CUevent e;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&buffer, 4096));
  printf(
      "facts,capture_mode,look_mode,queried,record,query,end,launch,query_after,"
      "reuse_record,reuse_query\n");
  for (int capture = 0; capture < 3; capture++)
    for (int mode = 0; mode < 3; mode++)
      for (int which = 0; which < 2; which++)
        facts(ctx, s, buffer, (CUstreamCaptureMode)capture, (CUstreamCaptureMode)mode, which);
  CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  printf("cost,stream,what,ns\n");
  const CUstream streams[] = {s, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};
  static const char *const stream_names[] = {"created", "legacy", "per-thread"};
  for (int turn = 0; turn < 3; turn++)
    for (int k = 0; k < 3; k++) {
      begin(stream_names[k]);
      printf("cost,%s,event_record,%.1f\n", stream_names[k], record_ns(streams[k], e, 0));
      printf("cost,%s,capture_check_and_record,%.1f\n", stream_names[k],
             record_ns(streams[k], e, 1));
    }
  CHECK(cuEventDestroy(e));
  begin("handle reuse");
  printf("handle,while,reused\n");
  handle_reuse();
  CHECK(cuMemFree(buffer));
  CHECK(cuStreamDestroy(s));
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
