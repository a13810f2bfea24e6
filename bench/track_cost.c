/* What the tracker's record costs beside the driver's own cuEventRecord, taken apart, on any
 * driver: the GPU host's (tests/gpu/track/tracker.sh runs it there) or a fake one here.
 *   track_cost PAIRS          (NCCLSHIM_CUDA_LIBRARY=/path/libcuda.so.1 picks another driver)
 *   track_cost PAIRS noop     a driver whose calls do nothing, built in: the tracker's own cost
 *   track_cost PAIRS locked   the same, but cuEventRecord, cuEventQuery and cuStreamIsCapturing
 *                             hold one process-wide lock for 200, 300 and 30 ns, as the real
 *                             driver's lock is held: a stand-in, on a CPU, for what a looking
 *                             thread's queries cost a recording thread
 * Per kind of stream (created, legacy, per-thread) and per way of looking, call by call in
 * turns on one stream, each call timed by itself (less the clock's own cost):
 *   event_record   cuEventRecord of one event, again and again (the driver's floor)
 *   capture_check  cuStreamIsCapturing, then that cuEventRecord (what the record adds in
 *                  driver calls)
 *   track_record   the watchdog's step: ncs_track_capturing, then ncs_track_record (an event
 *                  of its own, from the tracker's pool)
 *   ring_record    cuEventRecord of the next of RING events in turn, never queried (what a
 *                  distinct event costs the driver, without the tracker)
 *   comm_record    ncclshim_comm_record on a watched one-rank communicator (deadline 60 s,
 *                  its watchdog looking every 10 ms whatever the way of looking): the whole
 *                  public call, where NCCL loads (the all-reduce rows need it too)
 * and the ways of looking (ncs_track_look frees the completed operations' events for reuse):
 *   quiet    the recording thread looks after each synchronisation (no other thread)
 *   look10   another thread looks every 10 ms (the watchdog's pass in tests/gpu/track/tracker.sh)
 *   look1    another thread looks every 1 ms
 * each with the stream idle, and with work enqueued before every call, untimed: a 4 KiB
 * host-to-device copy ("copy"), or a one-rank all-reduce of 1,024 floats through the NCCL
 * that ncclshim_init finds ("allreduce", as tests/gpu/track/tracker_comm.cu times the record):
 * (with the built-in driver: idle, and "evict", 512 KiB written before every call as an
 * enqueue pushes the caller's data out of the first caches), printed as rows
 * kind,work,look,what,ns (medians) and any,any,clock,ns. Exit 0, 1 when a call
 * failed, 77 without a driver or device. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/watchdog.h"
#include "track.h"

enum { SYNC_EVERY = 128, WARM = 512, WHATS = 5, LOOKS = 3, KINDS = 3, RING = 2048 };

static const char *const what_names[WHATS] = {"event_record", "capture_check", "track_record",
                                              "ring_record", "comm_record"};
static const char *const look_names[LOOKS] = {"quiet", "look10", "look1"};
static const int look_ms[LOOKS] = {0, 10, 1};
static const char *const kind_names[KINDS] = {"created", "legacy", "per-thread"};

static const ncclshim_cuda_table *CU;
static ncs_track_driver driver;
enum { IDLE, COPY, ALLREDUCE, WORKS, EVICT = COPY };
static const char *const work_names[WORKS] = {"idle", "copy", "allreduce"};
static int noop; /* the built-in driver: its second work is "evict" */
/* "evict" (the built-in driver): 512 KiB written before each call, as a real enqueue (NCCL's
 * launch) pushes the caller's data out of the first caches. */
static char evict_buffer[512 << 10];
static CUdeviceptr work_buffer; /* 0: no work (the built-in driver) */
static char work_source[4096];
static ncclshim_comm *comm; /* NULL: no all-reduce and no comm_record (no NCCL) */
static ncclshim_watchdog *dog;

/* The untimed work before a call; 0 when enqueued. */
static int enqueue_work(int work, CUstream s) {
  const ncclshim_nccl_table *nccl = ncclshim_table();
  if (noop) {
    if (work == EVICT) memset(evict_buffer, (int)(uintptr_t)s, sizeof(evict_buffer));
    return 0;
  }
  if (work == COPY) return CU->cuMemcpyHtoDAsync(work_buffer, work_source, sizeof(work_source), s);
  if (work == ALLREDUCE)
    return nccl->ncclAllReduce((const void *)work_buffer, (void *)(work_buffer + 2048), 256,
                               ncclFloat32, ncclSum, ncclshim_comm_raw(comm), (cudaStream_t)s);
  return 0;
}

/* A watched one-rank communicator on device 0, when NCCL loads. */
static void open_comm(void) {
  ncclUniqueId id;
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  const char *step = "ncclshim_init";
  if (ncclshim_init() != NCCLSHIM_OK ||
      (step = "ncclGetUniqueId", ncclshim_table()->ncclGetUniqueId(&id)) != ncclSuccess ||
      (step = "ncclshim_comm_init", ncclshim_comm_init(NULL, 1, &id, 0, &options, &comm)) !=
          NCCLSHIM_OK ||
      (step = "ncclshim_comm_wait", ncclshim_comm_wait(comm, 60000)) != NCCLSHIM_OK ||
      (step = "ncclshim_watchdog_start", ncclshim_watchdog_start(NULL, &dog)) != NCCLSHIM_OK ||
      (step = "ncclshim_comm_watch", ncclshim_comm_watch(comm, dog, 60000)) != NCCLSHIM_OK) {
    fprintf(stderr, "track_cost: no all-reduce or comm_record rows: %s failed: %s\n", step,
            ncclshim_last_error());
    if (comm != NULL) ncclshim_comm_abort(comm, 10000);
    ncclshim_comm_free(comm);
    ncclshim_watchdog_stop(dog);
    comm = NULL;
    dog = NULL;
  }
}

/* The built-in driver that does nothing: every call answers success at once; an event or a
 * stream is a distinct address; there is one context. */
static char noop_objects[1 << 16];
static atomic_int noop_next;
static int noop_locked; /* "locked": the calls hold driver_lock */
static atomic_flag driver_lock = ATOMIC_FLAG_INIT;

/* Hold the built-in driver's lock for `ns` (when "locked"). */
static void hold(int ns) {
  if (!noop_locked) return;
  while (atomic_flag_test_and_set_explicit(&driver_lock, memory_order_acquire)) {
  }
  int64_t until = now_ns() + ns;
  while (now_ns() < until) {
  }
  atomic_flag_clear_explicit(&driver_lock, memory_order_release);
}
static ncclshim_cu_result noop_make(void **out) {
  *out = &noop_objects[atomic_fetch_add(&noop_next, 1) % (int)sizeof(noop_objects)];
  return 0;
}
static ncclshim_cu_result noop_event_create(CUevent *e, unsigned flags) {
  (void)flags;
  return noop_make((void **)e);
}
static ncclshim_cu_result noop_stream_create(CUstream *s, unsigned flags) {
  (void)flags;
  return noop_make((void **)s);
}
static ncclshim_cu_result noop_event(CUevent e) { return e != NULL ? 0 : 1; }
static ncclshim_cu_result noop_query(CUevent e) {
  hold(300);
  return e != NULL ? 0 : 1;
}
static ncclshim_cu_result noop_record(CUevent e, CUstream s) {
  (void)s;
  hold(200);
  return e != NULL ? 0 : 1;
}
static ncclshim_cu_result noop_stream(CUstream s) {
  (void)s;
  return 0;
}
static ncclshim_cu_result noop_capturing(CUstream s, ncclshim_cu_stream_capture_status *c) {
  (void)s;
  hold(30);
  *c = NCCLSHIM_CU_STREAM_CAPTURE_STATUS_NONE;
  return 0;
}
static ncclshim_cu_result noop_get_current(CUcontext *c) {
  *c = (CUcontext)noop_objects;
  return 0;
}
static ncclshim_cu_result noop_set_current(CUcontext c) { return c != NULL ? 0 : 1; }
static ncclshim_cu_result noop_stream_ctx(CUstream s, CUcontext *c) {
  (void)s;
  return noop_get_current(c);
}
static ncclshim_cu_result noop_device_get(CUdevice *d, int ordinal) {
  *d = ordinal;
  return 0;
}
static ncclshim_cu_result noop_retain(CUcontext *c, CUdevice d) {
  (void)d;
  return noop_get_current(c);
}

static const ncclshim_cuda_table *noop_table(void) {
  static ncclshim_cuda_table t;
  t.cuEventCreate = noop_event_create;
  t.cuEventDestroy = noop_event;
  t.cuEventRecord = noop_record;
  t.cuEventQuery = noop_query;
  t.cuCtxGetCurrent = noop_get_current;
  t.cuCtxSetCurrent = noop_set_current;
  t.cuStreamIsCapturing = noop_capturing;
  t.cuStreamGetCtx = noop_stream_ctx;
  t.cuStreamCreate = noop_stream_create;
  t.cuStreamDestroy = noop_stream;
  t.cuStreamSynchronize = noop_stream;
  t.cuDeviceGet = noop_device_get;
  t.cuDevicePrimaryCtxRetain = noop_retain;
  return &t;
}

/* What clock_gettime itself costs, timed as the calls are. */
static double clock_cost(void) {
  enum { N = 10001 };
  static double v[N];
  for (int i = 0; i < N; i++) {
    int64_t a = now_ns();
    v[i] = (double)(now_ns() - a);
  }
  return median_of(v, N);
}

typedef struct looker {
  pthread_t thread;
  ncs_tracker *t;
  CUcontext ctx;
  int every_ms;
  atomic_int stop, failed;
} looker;

static void *look_loop(void *arg) {
  looker *l = arg;
  CUcontext current = NULL;
  if (CU->cuCtxSetCurrent(l->ctx) == 0) current = l->ctx;
  struct timespec pause = {0, (long)l->every_ms * 1000000};
  while (!atomic_load(&l->stop)) {
    ncs_track_seen seen;
    ncs_track_look(l->t, &current, &seen);
    if (seen.failed) atomic_store(&l->failed, 1);
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* One call of `what`, timed (ring: RING events, used in turn). */
static double timed(int what, ncs_tracker *t, CUevent ev, CUevent *ring, CUstream s, double clock,
                    int *failed) {
  static unsigned next;
  static const ncs_track_op op = {.call = "ncclAllReduce", .count = 1024, .type = 7, .n = 1};
  ncclshim_cu_result r = 0;
  int64_t a = now_ns();
  if (what == 0) {
    r = CU->cuEventRecord(ev, s);
  } else if (what == 1) {
    ncclshim_cu_stream_capture_status capture;
    r = CU->cuStreamIsCapturing(s, &capture);
    if (r == 0) r = CU->cuEventRecord(ev, s);
  } else if (what == 3) {
    r = CU->cuEventRecord(ring[next++ % RING], s);
  } else if (what == 4) {
    if (comm != NULL && ncclshim_comm_record(comm, s, "ncclAllReduce", 256, ncclFloat32) != 0)
      r = 1;
  } else {
    ncs_track_failure why;
    if (ncs_track_capturing(&driver, s, &r) != 0 || ncs_track_record(t, s, &op, &why) != 0)
      r = r != 0 ? r : why.result != 0 ? why.result : 1;
  }
  int64_t b = now_ns();
  if (r != 0) {
    fprintf(stderr, "track_cost: %s failed with %d\n", what_names[what], (int)r);
    *failed = 1;
  }
  return (double)(b - a) - clock;
}

/* The medians of one kind of stream and one way of looking, printed. */
static int measure(int kind, int work, int look, CUcontext ctx, int pairs, double clock) {
  CUstream s = kind == 1   ? NCCLSHIM_CU_STREAM_LEGACY
               : kind == 2 ? NCCLSHIM_CU_STREAM_PER_THREAD
                           : NULL;
  if (kind == 0 && CU->cuStreamCreate(&s, 1 /* non-blocking */) != 0) return 1;
  CUevent ev = NULL, ring[RING];
  ncs_tracker *t = ncs_track_create(&driver);
  if (t == NULL || CU->cuEventCreate(&ev, NCCLSHIM_CU_EVENT_DISABLE_TIMING) != 0) return 1;
  for (int i = 0; i < RING; i++)
    if (CU->cuEventCreate(&ring[i], NCCLSHIM_CU_EVENT_DISABLE_TIMING) != 0) return 1;
  looker l = {.t = t, .ctx = ctx, .every_ms = look_ms[look]};
  if (look > 0 && pthread_create(&l.thread, NULL, look_loop, &l) != 0) return 1;
  double *v[WHATS];
  for (int w = 0; w < WHATS; w++) v[w] = malloc((size_t)pairs * sizeof(double));
  int failed = 0, n = 0;
  for (int i = -WARM; i < pairs && !failed; i++) {
    for (int turn = 0; turn < WHATS; turn++) {
      int what = (turn + i + WHATS * 4) % WHATS; /* each first, second and third in turn */
      if (enqueue_work(work, s) != 0) failed = 1;
      double ns = timed(what, t, ev, ring, s, clock, &failed);
      if (i >= 0) v[what][n] = ns;
    }
    if (i >= 0) n++;
    if ((i + WARM) % SYNC_EVERY == SYNC_EVERY - 1) {
      failed |= CU->cuStreamSynchronize(s) != 0;
      ncs_track_seen seen;
      CUcontext current = ctx;
      if (look == 0) ncs_track_look(t, &current, &seen);
    }
  }
  failed |= CU->cuStreamSynchronize(s) != 0;
  if (look > 0) {
    atomic_store(&l.stop, 1);
    pthread_join(l.thread, NULL);
    failed |= atomic_load(&l.failed);
  }
  if (!failed)
    for (int w = 0; w < (comm != NULL ? WHATS : WHATS - 1); w++)
      printf("%s,%s,%s,%s,%.1f\n", kind_names[kind],
             noop && work == EVICT ? "evict" : work_names[work], look_names[look], what_names[w],
             median_of(v[w], (size_t)n));
  for (int w = 0; w < WHATS; w++) free(v[w]);
  ncs_track_destroy(t);
  CU->cuEventDestroy(ev);
  for (int i = 0; i < RING; i++) CU->cuEventDestroy(ring[i]);
  if (kind == 0) CU->cuStreamDestroy(s);
  return failed;
}

int main(int argc, char **argv) {
  int pairs = argc >= 2 ? atoi(argv[1]) : 0;
  noop_locked = argc == 3 && strcmp(argv[2], "locked") == 0;
  noop = noop_locked || (argc == 3 && strcmp(argv[2], "noop") == 0);
  if (pairs <= 0 || argc > 3 || (argc == 3 && !noop)) {
    fprintf(stderr, "usage: %s PAIRS [noop|locked]\n", argv[0]);
    return 2;
  }
  if (noop) {
    CU = noop_table();
  } else {
    ncclshim_cuda *cuda = ncclshim_cuda_default();
    if (ncclshim_cuda_init(cuda) != NCCLSHIM_OK) {
      fprintf(stderr, "track_cost: no CUDA driver: %s\n", ncclshim_last_error());
      return 77;
    }
    CU = ncclshim_cuda_functions(cuda);
  }
  ncs_track_driver_of_table(CU, &driver);
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  if (CU->cuDeviceGet(&dev, 0) != 0 || CU->cuDevicePrimaryCtxRetain(&ctx, dev) != 0 ||
      CU->cuCtxSetCurrent(ctx) != 0) {
    fprintf(stderr, "track_cost: no device 0\n");
    return 77;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  double clock = clock_cost();
  int failed = 0;
  if (!noop && CU->cuMemAlloc(&work_buffer, sizeof(work_source)) != 0) {
    fprintf(stderr, "track_cost: cuMemAlloc failed\n");
    return 1;
  }
  if (!noop) open_comm();
  int works = noop ? 2 : comm != NULL ? WORKS : ALLREDUCE;
  printf("kind,work,look,what,ns\n");
  for (int kind = 0; kind < KINDS; kind++)
    for (int work = 0; work < works; work++)
      for (int look = 0; look < LOOKS; look++)
        failed |= measure(kind, work, look, ctx, pairs, clock);
  printf("any,any,any,clock,%.1f\n", clock);
  if (comm != NULL) {
    ncclshim_comm_destroy(comm, 10000);
    ncclshim_comm_free(comm);
    ncclshim_watchdog_stop(dog);
  }
  return failed;
}
