/* A plain NCCL program: it includes the real nccl.h and cuda_runtime.h and knows nothing of
 * ncclshim. Built twice, linked once against libnccl and once against ncclshim's drop-in
 * (bench/gpu/run.sh), it checks all-reduce, broadcast, all-gather, reduce-scatter and
 * send/recv on every visible GPU (one process, ncclCommInitAll) and times all-reduce.
 *   collectives VARIANT [MAX_BYTES]   prints CSV rows: variant,nccl,op,bytes,us,busbw_GBps
 * Exits 77 where there are fewer than 2 GPUs. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16

#define CUDA(call)                                                                          \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)
#define NCCL(call)                                                                              \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(NULL));                                                          \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static int n;
static ncclComm_t comms[MAX_GPUS];
static cudaStream_t streams[MAX_GPUS];
static float *send_buf[MAX_GPUS], *recv_buf[MAX_GPUS], *host;
static size_t capacity; /* floats per buffer */
static int failures;

static void sync_all(void) {
  for (int r = 0; r < n; r++) {
    CUDA(cudaSetDevice(r));
    CUDA(cudaStreamSynchronize(streams[r]));
  }
}

static void fill(int r, size_t count, float base) {
  for (size_t i = 0; i < count; i++) host[i] = base + (float)(i % 97);
  CUDA(cudaSetDevice(r));
  CUDA(cudaMemcpy(send_buf[r], host, count * sizeof(float), cudaMemcpyHostToDevice));
  CUDA(cudaMemset(recv_buf[r], 0xff, count * sizeof(float) * n)); /* poison */
}

/* recv_buf[r][i] == expected(r, i) for i < count */
static void check(const char *op, size_t count, float (*expected)(int r, size_t i)) {
  for (int r = 0; r < n; r++) {
    CUDA(cudaSetDevice(r));
    CUDA(cudaMemcpy(host, recv_buf[r], count * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; i++) {
      if (host[i] != expected(r, i)) {
        printf("FAIL %s rank %d element %zu: %g, expected %g\n", op, r, i, host[i], expected(r, i));
        failures++;
        break;
      }
    }
  }
}

static size_t chunk; /* per-rank element count of all-gather / reduce-scatter */
static float sum_expected(int r, size_t i) {
  (void)r;
  return (float)(n * (n + 1) / 2) + (float)n * (float)(i % 97);
}
static float bcast_expected(int r, size_t i) {
  (void)r;
  return 1.0f + (float)(i % 97);
}
static float gather_expected(int r, size_t i) {
  (void)r;
  return (float)(i / chunk + 1) + (float)((i % chunk) % 97);
}
static float scatter_expected(int r, size_t i) {
  return (float)(n * (n + 1) / 2) + (float)n * (float)((r * chunk + i) % 97);
}
static float ring_expected(int r, size_t i) {
  return (float)((r + n - 1) % n + 1) + (float)(i % 97);
}

static void correctness(void) {
  size_t count = 1 << 20;
  chunk = count / n;
  for (int r = 0; r < n; r++) fill(r, count, (float)(r + 1));
  NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++)
    NCCL(
        ncclAllReduce(send_buf[r], recv_buf[r], count, ncclFloat32, ncclSum, comms[r], streams[r]));
  NCCL(ncclGroupEnd());
  sync_all();
  check("all-reduce", count, sum_expected);

  NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++)
    NCCL(ncclBroadcast(send_buf[r], recv_buf[r], count, ncclFloat32, 0, comms[r], streams[r]));
  NCCL(ncclGroupEnd());
  sync_all();
  check("broadcast", count, bcast_expected);

  NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++)
    NCCL(ncclAllGather(send_buf[r], recv_buf[r], chunk, ncclFloat32, comms[r], streams[r]));
  NCCL(ncclGroupEnd());
  sync_all();
  check("all-gather", chunk * n, gather_expected);

  NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++)
    NCCL(ncclReduceScatter(send_buf[r], recv_buf[r], chunk, ncclFloat32, ncclSum, comms[r],
                           streams[r]));
  NCCL(ncclGroupEnd());
  sync_all();
  check("reduce-scatter", chunk, scatter_expected);

  NCCL(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    NCCL(ncclSend(send_buf[r], count, ncclFloat32, (r + 1) % n, comms[r], streams[r]));
    NCCL(ncclRecv(recv_buf[r], count, ncclFloat32, (r + n - 1) % n, comms[r], streams[r]));
  }
  NCCL(ncclGroupEnd());
  sync_all();
  check("send/recv", count, ring_expected);
}

static int compare_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* All-reduce times, median of `reps` repetitions of `iters` back-to-back calls. */
static void timing(const char *variant, const char *version, size_t max_bytes) {
  cudaEvent_t start, stop;
  CUDA(cudaSetDevice(0));
  CUDA(cudaEventCreate(&start));
  CUDA(cudaEventCreate(&stop));
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    size_t count = bytes / sizeof(float);
    int iters = bytes <= (1 << 20) ? 200 : bytes <= (64 << 20) ? 40 : 10;
    enum { REPS = 7 };
    float us[REPS];
    for (int rep = -1; rep < REPS; rep++) { /* rep -1 warms up */
      CUDA(cudaSetDevice(0));
      CUDA(cudaEventRecord(start, streams[0]));
      for (int it = 0; it < iters; it++) {
        NCCL(ncclGroupStart());
        for (int r = 0; r < n; r++)
          NCCL(ncclAllReduce(send_buf[r], recv_buf[r], count, ncclFloat32, ncclSum, comms[r],
                             streams[r]));
        NCCL(ncclGroupEnd());
      }
      CUDA(cudaSetDevice(0));
      CUDA(cudaEventRecord(stop, streams[0]));
      sync_all();
      float ms;
      CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (rep >= 0) us[rep] = ms * 1000.0f / (float)iters;
    }
    qsort(us, REPS, sizeof(float), compare_float);
    double busbw = (double)bytes / (us[REPS / 2] * 1e-6) / 1e9 * 2.0 * (n - 1) / n;
    printf("%s,%s,all-reduce,%zu,%.2f,%.2f,%.2f,%.2f\n", variant, version, bytes, us[REPS / 2],
           busbw, us[0], us[REPS - 1]);
  }
}

int main(int argc, char **argv) {
  const char *variant = argc > 1 ? argv[1] : "program";
  size_t max_bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)256 << 20;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 2) {
    printf("fewer than 2 GPUs: skipped\n");
    return 77;
  }
  if (n > MAX_GPUS) n = MAX_GPUS;
  int code;
  NCCL(ncclGetVersion(&code));
  char version[32];
  snprintf(version, sizeof(version), "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
  capacity = max_bytes / sizeof(float) > (size_t)(1 << 20) ? max_bytes / sizeof(float) : (1 << 20);
  host = malloc(capacity * sizeof(float) * n);
  for (int r = 0; r < n; r++) {
    CUDA(cudaSetDevice(r));
    CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CUDA(cudaMalloc((void **)&send_buf[r], capacity * sizeof(float)));
    CUDA(cudaMalloc((void **)&recv_buf[r], capacity * sizeof(float) * n));
  }
  NCCL(ncclCommInitAll(comms, n, NULL));
  correctness();
  fprintf(stderr, "%s: NCCL %s on %d GPUs: correctness %s\n", variant, version, n,
          failures ? "FAILED"
                   : "passed (all-reduce, broadcast, all-gather, reduce-scatter, send/recv)");
  if (!failures) timing(variant, version, max_bytes);
  for (int r = 0; r < n; r++) NCCL(ncclCommDestroy(comms[r]));
  return failures ? 1 : 0;
}
