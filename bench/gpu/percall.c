/* Host-visible time per all-reduce call (float32, sum, one process per GPU), from the call to
 * the moment the host knows the result is there, for the ways a program can run it with and
 * without hang detection. One source, three builds (bench/gpu/percall.sh):
 *   direct  linked with -lnccl
 *   dropin  linked with -lncclshim-nccl
 *   shim    linked with -lncclshim (-DVIA_TABLE)
 * The variants:
 *   blocking    NCCL's own ncclAllReduce on a blocking communicator, cudaStreamSynchronize
 *   spin        NCCL's own functions on a non-blocking one: ncclAllReduce,
 *               ncclCommGetAsyncError until it stops saying ncclInProgress, then
 *               cudaStreamQuery and ncclCommGetAsyncError in a tight loop (the hand-written
 *               loop that detects hangs)
 *   dropin      as blocking, through the drop-in's exported ncclAllReduce (dropin build)
 *   table       as blocking, through ncclshim_table() (shim build)
 *   nonblocking ncclshim_comm_check + ncclshim_comm_wait_stream on a non-blocking one (shim)
 *   watchdog    NCCLSHIM_COMM_SPLIT_BLOCKING communicator watched by the watchdog:
 *               ncclAllReduce, ncclshim_comm_check, ncclshim_comm_record,
 *               cudaStreamSynchronize (shim)
 * blocking and spin run in every build, so that each variant is compared with NCCL's own call
 * in the same process: linked in the direct build, and elsewhere called through the address
 * dlsym gives in the libnccl that ncclshim loaded (NCCLSHIM_NCCL_LIBRARY), which the shim
 * build checks is the very function its table holds. A PLT call is an indirect call too.
 * Within a process the variants take turns call by call, the first one rotating, so that all
 * see the same drift of the machine; rank 0 prints CSV
 *   variant,nccl,bytes,us_median,us_p10,us_p90,calls,enqueue_us_median
 * from per-call samples (enqueue: until ncclCommGetAsyncError stopped saying ncclInProgress,
 * for the non-blocking variants; empty for the others). The shim build's `detect DEADLINE_MS`
 * mode instead stops rank 1 (SIGSTOP, a hung peer) and measures how long rank 0 takes to
 * learn of it, non-blocking (the wait's TIMEOUT) and with the watchdog (its callback), printing
 *   detect,nccl,mode,deadline_ms,detected_ms,ratio,released_ms
 * Every child has an alarm: nothing outlives its time, and the parent kills and reaps the
 * stopped rank. Usage: percall VARIANTS MIN_BYTES MAX_BYTES   (VARIANTS: comma-separated)
 *                      percall detect DEADLINE_MS */
#define _GNU_SOURCE /* clock_gettime, usleep, kill, RTLD_NOLOAD under -std=c11 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_checks.h"
#include "bench_clock.h"
#ifdef VIA_TABLE
#include <stdatomic.h>

#include "ncclshim/comm.h"
#define SHIM(call) CHECK((call) == NCCLSHIM_OK, "%s: %s", #call, ncclshim_last_error())
#endif

enum { NRANKS = 2, MAX_VARIANTS = 6, TIMEOUT_MS = 60000 };
static float *sendbuf, *recvbuf;
static cudaStream_t stream;

/* ---- NCCL's own functions, for blocking and spin --------------------------------------- */

static struct {
  __typeof__(ncclAllReduce) *all_reduce;
  __typeof__(ncclCommGetAsyncError) *async_error;
} own;

#if defined(VIA_TABLE) || defined(VIA_DROPIN)
/* From the libnccl already loaded (by ncclshim or the drop-in), found by its path. */
static void find_own_functions(void) {
  const char *path = getenv("NCCLSHIM_NCCL_LIBRARY");
  CHECK(path != NULL, "NCCLSHIM_NCCL_LIBRARY is not set");
  int code = 0;
  NCCL(N(ncclGetVersion)(&code)); /* NCCL is loaded from here on */
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  CHECK(lib != NULL, "%s is not the loaded NCCL: %s", path, dlerror());
  own.all_reduce = (__typeof__(own.all_reduce))dlsym(lib, "ncclAllReduce");
  own.async_error = (__typeof__(own.async_error))dlsym(lib, "ncclCommGetAsyncError");
  CHECK(own.all_reduce && own.async_error, "%s lacks ncclAllReduce or ncclCommGetAsyncError", path);
#ifdef VIA_TABLE
  CHECK(own.all_reduce == table->ncclAllReduce, "the table's ncclAllReduce is not NCCL's own");
#else
  CHECK(own.all_reduce != ncclAllReduce, "the drop-in's ncclAllReduce is NCCL's own");
#endif
}
#else
static void find_own_functions(void) {
  own.all_reduce = ncclAllReduce;
  own.async_error = ncclCommGetAsyncError;
}
#endif

/* ---- The communicators, one unique id each (rank 0 makes them, pipes hand them down) ---- */

static int (*pipes)[2];

static ncclComm_t raw_comm(int blocking) {
  ncclUniqueId id = shared_id(NRANKS, pipes);
  ncclComm_t comm;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking;
  ncclResult_t r = N(ncclCommInitRankConfig)(&comm, NRANKS, id, rank, &config);
  ncclResult_t async = r;
  while (async == ncclInProgress) N(ncclCommGetAsyncError)(comm, &async);
  CHECK(async == ncclSuccess, "init: %s", N(ncclGetErrorString)(async));
  return comm;
}

#ifdef VIA_TABLE
static ncclshim_watchdog *dog;
static _Atomic int64_t failed_at_ns;

static void on_failure(ncclshim_comm *comm, ncclshim_status status, const char *message,
                       void *user) {
  (void)comm, (void)status, (void)user;
  atomic_store(&failed_at_ns, now_ns());
  fprintf(stderr, "rank %d: watchdog: %s\n", rank, message);
}

static ncclshim_comm *shim_comm(int blocking) {
  ncclUniqueId id = shared_id(NRANKS, pipes);
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = blocking;
  ncclshim_comm *comm = NULL;
  SHIM(ncclshim_comm_init(NULL, NRANKS, &id, rank, &options, &comm));
  SHIM(ncclshim_comm_wait(comm, TIMEOUT_MS));
  return comm;
}
#endif

/* ---- One call of each variant: enqueue, then know it is done ----------------------------- */

typedef struct variant {
  const char *name;
  ncclComm_t raw;
#ifdef VIA_TABLE
  ncclshim_comm *comm;
#endif
} variant;

static int64_t enqueued_ns; /* when the last non-blocking call's enqueue was known done */

static void sync_stream(void) { CUDA(cudaStreamSynchronize(stream)); }

static void one_call(const variant *v, size_t n) {
  if (strcmp(v->name, "spin") == 0) {
    ncclResult_t r = own.all_reduce(sendbuf, recvbuf, n, ncclFloat32, ncclSum, v->raw, stream);
    while (r == ncclInProgress) own.async_error(v->raw, &r);
    enqueued_ns = now_ns();
    CHECK(r == ncclSuccess, "ncclAllReduce: %s", N(ncclGetErrorString)(r));
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) break;
      CHECK(q == cudaErrorNotReady, "cudaStreamQuery: %d", (int)q);
      NCCL(own.async_error(v->raw, &r));
    }
    return;
  }
#ifdef VIA_TABLE
  if (v->comm != NULL) {
    ncclResult_t r = N(ncclAllReduce)(sendbuf, recvbuf, n, ncclFloat32, ncclSum,
                                      ncclshim_comm_raw(v->comm), stream);
    SHIM(ncclshim_comm_check(v->comm, r, "ncclAllReduce", TIMEOUT_MS));
    enqueued_ns = now_ns();
    if (strcmp(v->name, "watchdog") == 0) {
      SHIM(ncclshim_comm_record(v->comm, stream, "ncclAllReduce", n, ncclFloat32));
      sync_stream();
    } else {
      SHIM(ncclshim_comm_wait_stream(v->comm, NULL, stream, TIMEOUT_MS));
    }
    return;
  }
  if (strcmp(v->name, "table") == 0) {
    NCCL(N(ncclAllReduce)(sendbuf, recvbuf, n, ncclFloat32, ncclSum, v->raw, stream));
    sync_stream();
    return;
  }
#endif
#ifdef VIA_DROPIN
  if (strcmp(v->name, "dropin") == 0) {
    NCCL(ncclAllReduce(sendbuf, recvbuf, n, ncclFloat32, ncclSum, v->raw, stream));
    sync_stream();
    return;
  }
#endif
  NCCL(own.all_reduce(sendbuf, recvbuf, n, ncclFloat32, ncclSum, v->raw, stream));
  sync_stream();
}

static int non_blocking(const variant *v) {
  return strcmp(v->name, "spin") == 0 || strcmp(v->name, "nonblocking") == 0;
}

static variant make_variant(const char *name) {
  variant v = {name, NULL
#ifdef VIA_TABLE
               ,
               NULL
#endif
  };
  if (strcmp(name, "spin") == 0) {
    v.raw = raw_comm(0);
#ifdef VIA_TABLE
  } else if (strcmp(name, "nonblocking") == 0) {
    v.comm = shim_comm(NCCLSHIM_COMM_NONBLOCKING);
  } else if (strcmp(name, "watchdog") == 0) {
    v.comm = shim_comm(NCCLSHIM_COMM_SPLIT_BLOCKING);
    SHIM(ncclshim_comm_watch(v.comm, dog, TIMEOUT_MS));
#endif
  } else {
    CHECK(strcmp(name, "blocking") == 0
#ifdef VIA_TABLE
              || strcmp(name, "table") == 0
#endif
#ifdef VIA_DROPIN
              || strcmp(name, "dropin") == 0
#endif
          ,
          "no variant %s in this build", name);
    v.raw = raw_comm(1);
  }
  return v;
}

static int nccl_version(void) {
  int code = 0;
  NCCL(N(ncclGetVersion)(&code));
  return code;
}

/* Calls per variant at a size: enough samples for a steady median, a few seconds in all. */
static int calls_at(size_t bytes) {
  return bytes <= (1 << 20) ? 1000 : bytes <= (64 << 20) ? 400 : bytes <= (256 << 20) ? 100 : 40;
}

static void measure(variant *variants, int count, size_t min_bytes, size_t max_bytes) {
  int code = nccl_version();
  static const size_t sizes[] = {8,       32,       128,      512,       2048,
                                 8192,    32768,    131072,   524288,    1 << 20,
                                 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30};
  for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
    size_t bytes = sizes[s], n = bytes / sizeof(float);
    if (bytes < min_bytes || bytes > max_bytes) continue;
    if (n == 0) n = 1;
    int calls = calls_at(bytes);
    double *us = malloc(sizeof(double) * (size_t)calls * MAX_VARIANTS);
    double *enq = malloc(sizeof(double) * (size_t)calls * MAX_VARIANTS);
    CHECK(us && enq, "out of memory");
    for (int w = 0; w < 3; w++)
      for (int v = 0; v < count; v++) one_call(&variants[v], n); /* warm-up */
    for (int c = 0; c < calls; c++) {
      for (int i = 0; i < count; i++) { /* call by call, the first one rotating */
        int v = (c + i) % count;
        int64_t t0 = now_ns();
        one_call(&variants[v], n);
        us[(size_t)v * calls + c] = (double)(now_ns() - t0) / 1e3;
        enq[(size_t)v * calls + c] = (double)(enqueued_ns - t0) / 1e3;
      }
    }
    for (int v = 0; v < count && rank == 0; v++) {
      double *x = us + (size_t)v * calls, *e = enq + (size_t)v * calls;
      double med = median_of(x, (size_t)calls), p10 = x[calls / 10], p90 = x[calls * 9 / 10];
      printf("%s,%d.%d.%d,%zu,%.3f,%.3f,%.3f,%d,", variants[v].name, code / 10000, code / 100 % 100,
             code % 100, bytes, med, p10, p90, calls);
      if (non_blocking(&variants[v])) printf("%.3f", median_of(e, (size_t)calls));
      printf("\n");
    }
    fflush(stdout);
    free(us);
    free(enq);
  }
}

/* ---- A stopped rank: how long until rank 0 knows -------------------------------------- */
#ifdef VIA_TABLE
/* 1 when the stream is idle within limit_ms (an abort should release it), else 0. */
static int drain(int limit_ms) {
  int64_t limit = now_ns() + (int64_t)limit_ms * 1000000;
  cudaError_t q;
  while ((q = cudaStreamQuery(stream)) == cudaErrorNotReady && now_ns() < limit) usleep(100);
  return q != cudaErrorNotReady;
}

static void detect(int deadline_ms) {
  int code = nccl_version();
  ncclshim_comm *nb = shim_comm(NCCLSHIM_COMM_NONBLOCKING);
  ncclshim_comm *w = shim_comm(NCCLSHIM_COMM_SPLIT_BLOCKING);
  SHIM(ncclshim_comm_watch(w, dog, deadline_ms));
  variant vw = {"watchdog", NULL, w}, vn = {"nonblocking", NULL, nb};
  for (int i = 0; i < 20; i++) {
    one_call(&vn, 1024);
    one_call(&vw, 1024);
  }
  if (rank == 1) {
    raise(SIGSTOP); /* a hung peer: alive, silent */
    return;
  }
  sleep(1); /* rank 1 is stopped by now */
  /* Non-blocking: the bounded wait's TIMEOUT, then an abort. */
  ncclResult_t r =
      N(ncclAllReduce)(sendbuf, recvbuf, 1024, ncclFloat32, ncclSum, ncclshim_comm_raw(nb), stream);
  int64_t t0 = now_ns();
  ncclshim_status status = ncclshim_comm_check(nb, r, "ncclAllReduce", deadline_ms);
  if (status == NCCLSHIM_OK) status = ncclshim_comm_wait_stream(nb, NULL, stream, deadline_ms);
  double detected = (double)(now_ns() - t0) / 1e6;
  CHECK(status == NCCLSHIM_TIMEOUT, "non-blocking: expected TIMEOUT, got %s",
        ncclshim_status_name(status));
  int64_t a0 = now_ns();
  status = ncclshim_comm_abort(nb, 10000);
  double released = drain(10000) ? (double)(now_ns() - a0) / 1e6 : -1.0;
  if (status != NCCLSHIM_OK) fprintf(stderr, "non-blocking abort: %s\n", ncclshim_last_error());
  printf("detect,%d.%d.%d,nonblocking,%d,%.1f,%.3f,%.1f\n", code / 10000, code / 100 % 100,
         code % 100, deadline_ms, detected, detected / deadline_ms, released);
  fflush(stdout);
  /* Watchdog: record, then wait on the stream as a blocking program does; the watchdog's
   * abort is what releases it. */
  r = N(ncclAllReduce)(sendbuf, recvbuf, 1024, ncclFloat32, ncclSum, ncclshim_comm_raw(w), stream);
  SHIM(ncclshim_comm_check(w, r, "ncclAllReduce", 0));
  t0 = now_ns();
  SHIM(ncclshim_comm_record(w, stream, "ncclAllReduce", 1024, ncclFloat32));
  /* As cudaStreamSynchronize would, but bounded, should the abort not release the stream. */
  int idle = drain(deadline_ms + 30000);
  int64_t at = atomic_load(&failed_at_ns);
  CHECK(at != 0, "the stream ended (idle %d) but the watchdog did not fire", idle);
  released = idle ? (double)(now_ns() - at) / 1e6 : -1.0;
  detected = (double)(at - t0) / 1e6;
  status = ncclshim_comm_record(w, stream, "ncclAllReduce", 1, ncclFloat32);
  CHECK(status == NCCLSHIM_TIMEOUT, "after the watchdog: expected TIMEOUT, got %s",
        ncclshim_status_name(status));
  if (ncclshim_comm_abort(w, 10000) != NCCLSHIM_OK)
    fprintf(stderr, "watchdog abort: %s\n", ncclshim_last_error());
  printf("detect,%d.%d.%d,watchdog,%d,%.1f,%.3f,%.1f\n", code / 10000, code / 100 % 100, code % 100,
         deadline_ms, detected, detected / deadline_ms, released);
  fflush(stdout);
}
#endif

static int child(char *variants_arg, size_t min_bytes, size_t max_bytes) {
  alarm(240); /* nothing outlives the script */
  CUDA(cudaSetDevice(rank));
  CUDA(cudaFree(NULL)); /* the primary context, current on this thread */
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t capacity = max_bytes > 4096 ? max_bytes : 4096;
  CUDA(cudaMalloc((void **)&sendbuf, capacity));
  CUDA(cudaMalloc((void **)&recvbuf, capacity));
  CUDA(cudaMemset(sendbuf, 0, capacity));
#ifdef VIA_TABLE
  ncclshim_watchdog_options options = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  options.interval_ms = 10;
  options.on_failure = on_failure;
  SHIM(ncclshim_watchdog_start(&options, &dog));
  if (strcmp(variants_arg, "detect") == 0) {
    detect((int)min_bytes);
    return 0;
  }
#endif
  find_own_functions();
  variant variants[MAX_VARIANTS];
  int count = 0;
  for (char *name = strtok(variants_arg, ","); name && count < MAX_VARIANTS;
       name = strtok(NULL, ","))
    variants[count++] = make_variant(name);
  measure(variants, count, min_bytes, max_bytes);
  /* No teardown: the process exits, and NCCL's resources go with it. */
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 3 && strcmp(argv[1], "detect") == 0)) {
    fprintf(stderr, "usage: %s VARIANTS MIN_BYTES MAX_BYTES | detect DEADLINE_MS\n", argv[0]);
    return 2;
  }
  size_t min_bytes = strtoull(argv[2], NULL, 0);
  size_t max_bytes = argc == 4 ? strtoull(argv[3], NULL, 0) : 4096;
#ifdef VIA_TABLE
  table = ncclshim_table();
#endif
  pipes = calloc(NRANKS, sizeof(*pipes));
  for (int r = 0; r < NRANKS; r++) CHECK(pipe(pipes[r]) == 0, "pipe");
  pid_t pids[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    if ((pids[r] = fork()) == 0) {
      rank = r;
      exit(child(argv[1], min_bytes, max_bytes));
    }
  }
  /* Rank 0 decides; a rank still there after it (stopped or stuck) is killed and reaped. */
  int status, failed = 0;
  waitpid(pids[0], &status, 0);
  failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  for (int r = 1; r < NRANKS; r++) {
    int waited = 0;
    for (int i = 0; i < 100 && !(waited = waitpid(pids[r], &status, WNOHANG) == pids[r]); i++)
      usleep(50000);
    if (!waited) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status, 0);
      fprintf(stderr, "rank %d: killed after rank 0 finished\n", r);
    } else {
      failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
  }
  return failed;
}
