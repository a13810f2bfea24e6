/* All-reduce (float32, sum) latency and bus bandwidth, one process per GPU, in the style of
 * nccl-tests. One source, three builds (bench/gpu/run.sh):
 *   direct  linked with -lnccl           calls ncclAllReduce
 *   dropin  linked with -lncclshim-nccl  calls ncclAllReduce (the drop-in's)
 *   table   linked with -lncclshim       calls ncclshim_table()->ncclAllReduce (-DVIA_TABLE)
 * The parent forks one child per GPU before any CUDA or NCCL call (NCCL may initialise CUDA,
 * which a forked child cannot inherit); rank 0 makes the unique id and hands it down pipes. Rank 0
 * prints CSV: variant,nccl,bytes,us,busbw_GBps,us_min,us_max allreduce_bench VARIANT MIN_BYTES
 * MAX_BYTES */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_checks.h"

static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int child(const char *variant, int nranks, int (*pipes)[2], size_t min_bytes,
                 size_t max_bytes) {
  ncclUniqueId id = shared_id(nranks, pipes);
  CUDA(cudaSetDevice(rank));
  float *send, *recv;
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  size_t count = 1 << 20; /* the correctness check's size */
  size_t capacity = max_bytes > count * sizeof(float) ? max_bytes : count * sizeof(float);
  CUDA(cudaMalloc((void **)&send, capacity));
  CUDA(cudaMalloc((void **)&recv, capacity));
  CUDA(cudaMemset(send, 0, capacity));
  ncclComm_t comm;
  NCCL(N(ncclCommInitRank)(&comm, nranks, id, rank));
  int code;
  NCCL(N(ncclGetVersion)(&code));
  cudaEvent_t start, stop;
  CUDA(cudaEventCreate(&start));
  CUDA(cudaEventCreate(&stop));

  /* Correctness at one size first: each rank contributes rank+1. */
  float *host = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; i++) host[i] = (float)(rank + 1);
  CUDA(cudaMemcpy(send, host, count * sizeof(float), cudaMemcpyHostToDevice));
  NCCL(N(ncclAllReduce)(send, recv, count, ncclFloat32, ncclSum, comm, stream));
  CUDA(cudaStreamSynchronize(stream));
  CUDA(cudaMemcpy(host, recv, count * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++)
    CHECK(host[i] == (float)(nranks * (nranks + 1) / 2), "wrong sum %g at %zu", host[i], i);
  free(host);

  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    size_t n = bytes / sizeof(float);
    int iters = bytes <= (1 << 20) ? 500 : bytes <= (64 << 20) ? 50 : bytes <= (512 << 20) ? 10 : 4;
    enum { REPS = 9 };
    float us[REPS];
    for (int rep = -2; rep < REPS; rep++) { /* two warm-up rounds */
      CUDA(cudaEventRecord(start, stream));
      for (int it = 0; it < iters; it++)
        NCCL(N(ncclAllReduce)(send, recv, n, ncclFloat32, ncclSum, comm, stream));
      CUDA(cudaEventRecord(stop, stream));
      CUDA(cudaStreamSynchronize(stream));
      float ms;
      CUDA(cudaEventElapsedTime(&ms, start, stop));
      if (rep >= 0) us[rep] = ms * 1000.0f / (float)iters;
    }
    qsort(us, REPS, sizeof(float), by_value);
    double algbw = (double)bytes / (us[REPS / 2] * 1e-6) / 1e9;
    if (rank == 0)
      printf("%s,%d.%d.%d,%zu,%.3f,%.3f,%.3f,%.3f\n", variant, code / 10000, code / 100 % 100,
             code % 100, bytes, us[REPS / 2], algbw * 2.0 * (nranks - 1) / nranks, us[0],
             us[REPS - 1]);
    fflush(stdout);
  }
  NCCL(N(ncclCommDestroy)(comm));
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s VARIANT MIN_BYTES MAX_BYTES\n", argv[0]);
    return 2;
  }
  size_t min_bytes = strtoull(argv[2], NULL, 0), max_bytes = strtoull(argv[3], NULL, 0);
#ifdef VIA_TABLE
  table = ncclshim_table();
#endif
  /* No CUDA call in the parent: the GPU count comes from the environment. */
  int nranks = getenv("NRANKS") ? atoi(getenv("NRANKS")) : 2;
  int(*pipes)[2] = calloc((size_t)nranks, sizeof(*pipes));
  for (int r = 0; r < nranks; r++) CHECK(pipe(pipes[r]) == 0, "pipe");
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    if (fork() == 0) {
      rank = r;
      exit(child(argv[1], nranks, pipes, min_bytes, max_bytes));
    }
  }
  for (int r = 0; r < nranks; r++) {
    int status;
    wait(&status);
    failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed;
}
