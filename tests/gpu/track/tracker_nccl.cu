// A plain one-rank NCCL program (NCCL's nccl.h, linked to libnccl.so.2, no ncclshim API) for
// the drop-in's hang dump on one GPU, run by tests/gpu/track/tracker.sh under LD_PRELOAD or
// LD_AUDIT of libncclshim-nccl.so.0 with NCCLSHIM_RECORD and NCCLSHIM_RECORD_HANG_MS:
//   tracker_nccl churn ROUNDS DIR WAIT_MS
//       per round a new stream (cudaStreamCreate and cudaStreamCreateWithFlags non-blocking in
//       turn), BURST all-reduces, the stream synchronised and destroyed at once (every 4th
//       round then idle IDLE_MS, the others making the next stream at once); then WAIT_MS
//       idle, for a false hang dump to show in DIR (false_dump=0|1). Then, when SIGUSR2 has a
//       handler (NCCLSHIM_RECORD_SIGNAL=USR2), raises it: the recorder's dump in DIR shows the
//       calls went through the drop-in (signal_dump_ms; -1: none came; none: no handler)
//   tracker_nccl hold KIND DIR
//       on a stream of KIND (tracker_common.cuh): BURST / 2 all-reduces, a kernel that holds
//       the stream (it gives up by itself after SPIN_LIMIT_MS), BURST / 2 all-reduces behind
//       it; waits (at most DUMP_WAIT_MS) for the hang dump in DIR: detected_ms from the first
//       held call's enqueue (-1: none); releases the kernel (gave_up=1: it hit its limit)
//   tracker_nccl cost PAIRS
//       per kind of stream, call by call in turns: an 8-float all-reduce through the drop-in
//       (the program's ncclAllReduce) and the same straight into the NCCL under it (asked by
//       handle), each timed; the stream synchronised every SYNC_EVERY pairs; before them,
//       WARM_MS of calls through the drop-in alone (several passes of the hang dump's thread,
//       which give its events back for reuse: the steady state, not the first pass). Prints
//       KIND,dropin_minus_direct,NS (the median of the paired differences) and
//       KIND,direct,NS (the median of the direct call)
// Prints key=value lines (and the cost rows); exit 0, 77 without a GPU, 1 when a call failed.
#include <dlfcn.h>
#include <nccl.h>
#include <signal.h>
#include <stdlib.h>

#include "has_dump.h"
#include "tracker_common.cuh"

enum { COUNT = 1024, BURST = 8, IDLE_MS = 15, SPIN_LIMIT_MS = 3000, DUMP_WAIT_MS = 3000 };
enum { SYNC_EVERY = 128, WARM_PAIRS = 512, WARM_MS = 400 };

static float *sendbuf, *recvbuf;
static ncclComm_t comm;
static int failures;

static void check(const char *what, int result) {
  if (result != 0) {
    printf("failed=%s:%d\n", what, result);
    failures++;
  }
}

static int setup(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaMalloc((void **)&sendbuf, COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc((void **)&recvbuf, COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMemset(sendbuf, 0, COUNT * sizeof(float));
  if (e == cudaSuccess) e = tracker_hold_init();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  check("CUDA setup", e);
  ncclUniqueId id;
  check("ncclGetUniqueId", ncclGetUniqueId(&id));
  if (failures == 0) check("ncclCommInitRank", ncclCommInitRank(&comm, 1, id, 0));
  return failures ? 1 : 0;
}

static void all_reduce(cudaStream_t s, size_t count) {
  check("ncclAllReduce", ncclAllReduce(sendbuf, recvbuf, count, ncclFloat32, ncclSum, comm, s));
}

// Milliseconds from `start` until a dump is in `dir`, looked for every ms; -1 after limit_ms.
static double wait_for_dump(const char *dir, int64_t start, int limit_ms) {
  while (tracker_ms_since(start) < limit_ms) {
    if (has_dump(dir)) return tracker_ms_since(start);
    usleep(1000);
  }
  return -1;
}

static void churn(int rounds, const char *dir, int wait_ms) {
  int reused = 0, r;
  cudaStream_t last = NULL;
  for (r = 0; r < rounds && failures == 0; r++) {
    cudaStream_t s = NULL;
    check("cudaStreamCreate",
          r % 2 ? cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) : cudaStreamCreate(&s));
    reused += s == last;
    last = s;
    for (int i = 0; i < BURST; i++) all_reduce(s, COUNT);
    check("cudaStreamSynchronize", cudaStreamSynchronize(s));
    check("cudaStreamDestroy", cudaStreamDestroy(s));
    if (r % 4 == 3) tracker_sleep_ms(IDLE_MS);
  }
  printf("rounds=%d\nreused=%d\n", r, reused);
  tracker_sleep_ms(wait_ms);
  printf("false_dump=%d\n", has_dump(dir));
  struct sigaction old;
  sigaction(SIGUSR2, NULL, &old);
  if (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN) {
    printf("signal_dump_ms=none\n");
    return;
  }
  int64_t start = tracker_now_ns();
  raise(SIGUSR2);
  printf("signal_dump_ms=%.0f\n", wait_for_dump(dir, start, DUMP_WAIT_MS));
}

static void hold(int kind, const char *dir) {
  cudaStream_t s = NULL;
  check("stream", tracker_stream(kind, &s));
  if (failures) return;
  for (int i = 0; i < BURST / 2; i++) all_reduce(s, COUNT);
  check("hold", tracker_hold(s, SPIN_LIMIT_MS));
  int64_t start = tracker_now_ns();
  for (int i = 0; i < BURST / 2; i++) all_reduce(s, COUNT);
  printf("detected_ms=%.1f\n", wait_for_dump(dir, start, DUMP_WAIT_MS));
  tracker_release();
  check("cudaStreamSynchronize", cudaStreamSynchronize(s));
  printf("gave_up=%d\n", tracker_gave_up());
  tracker_stream_done(kind, s);
}

typedef ncclResult_t (*all_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                      ncclComm_t, cudaStream_t);

// The NCCL under the drop-in: the libnccl.so.2 this process has mapped, asked by handle (under
// LD_PRELOAD the program's own ncclAllReduce is the drop-in's). NULL when they are the same.
static all_reduce_fn nccl_under(void) {
  void *nccl = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (nccl == NULL) return NULL;
  all_reduce_fn fn = (all_reduce_fn)dlsym(nccl, "ncclAllReduce");
  dlclose(nccl);
  return fn != (all_reduce_fn)ncclAllReduce ? fn : NULL;
}

static double timed_ns(all_reduce_fn fn, cudaStream_t s, double clock) {
  int64_t start = tracker_now_ns();
  check("ncclAllReduce", fn(sendbuf, recvbuf, 8, ncclFloat32, ncclSum, comm, s));
  return (double)(tracker_now_ns() - start) - clock;
}

static void cost(int pairs) {
  all_reduce_fn direct = nccl_under();
  if (direct == NULL) {
    printf("failed=no NCCL under the drop-in (run under LD_PRELOAD)\n");
    failures++;
    return;
  }
  double clock = tracker_clock_ns();
  for (int kind = 0; kind < TRACKER_KINDS && failures == 0; kind++) {
    cudaStream_t s = NULL;
    check("stream", tracker_stream(kind, &s));
    std::vector<double> diff, straight;
    for (int64_t until = tracker_now_ns() + (int64_t)WARM_MS * 1000000, i = 0;
         tracker_now_ns() < until && failures == 0; i++) {
      timed_ns(ncclAllReduce, s, clock);
      if (i % SYNC_EVERY == SYNC_EVERY - 1)
        check("cudaStreamSynchronize", cudaStreamSynchronize(s));
    }
    for (int i = -WARM_PAIRS; i < pairs && failures == 0; i++) {
      double through, plain;
      if (i % 2) {
        through = timed_ns(ncclAllReduce, s, clock);
        plain = timed_ns(direct, s, clock);
      } else {
        plain = timed_ns(direct, s, clock);
        through = timed_ns(ncclAllReduce, s, clock);
      }
      if (i >= 0) {
        diff.push_back(through - plain);
        straight.push_back(plain);
      }
      if ((i + WARM_PAIRS) % SYNC_EVERY == SYNC_EVERY - 1)
        check("cudaStreamSynchronize", cudaStreamSynchronize(s));
    }
    check("cudaStreamSynchronize", cudaStreamSynchronize(s));
    printf("%s,dropin_minus_direct,%.1f\n", tracker_kind_names[kind], tracker_median(diff));
    printf("%s,direct,%.1f\n", tracker_kind_names[kind], tracker_median(straight));
    tracker_stream_done(kind, s);
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *mode = argc >= 2 ? argv[1] : "";
  int kind = argc == 4 ? tracker_kind(argv[2]) : -1;
  if (!((strcmp(mode, "churn") == 0 && argc == 5 && atoi(argv[2]) > 0 && atoi(argv[4]) >= 0) ||
        (strcmp(mode, "hold") == 0 && kind >= 0) ||
        (strcmp(mode, "cost") == 0 && argc == 3 && atoi(argv[2]) > 0))) {
    fprintf(stderr,
            "usage: %s churn ROUNDS DIR WAIT_MS | hold created|legacy|per-thread DIR | "
            "cost PAIRS\n",
            argv[0]);
    return 2;
  }
  int status = setup();
  if (status != 0) return status;
  if (strcmp(mode, "churn") == 0)
    churn(atoi(argv[2]), argv[3], atoi(argv[4]));
  else if (strcmp(mode, "hold") == 0)
    hold(kind, argv[3]);
  else
    cost(atoi(argv[2]));
  check("ncclCommDestroy", ncclCommDestroy(comm));
  printf("failures=%d\n", failures);
  return failures ? 1 : 0;
}
