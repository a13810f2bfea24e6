/* What the GPU benchmark programs share: N(f) names an NCCL function directly, or through
 * ncclshim's table when built with -DVIA_TABLE (the program sets `table`), and the checks that
 * end the process with a message naming the rank. Include after the system headers. */
#ifndef NCCLSHIM_BENCH_CHECKS_H
#define NCCLSHIM_BENCH_CHECKS_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef VIA_TABLE
#include "ncclshim/ncclshim.h"
static const ncclshim_nccl_table *table;
#define N(f) (table->f)
#else
#define N(f) f
#endif

static int rank;

#define CHECK(ok, ...)                    \
  do {                                    \
    if (!(ok)) {                          \
      fprintf(stderr, "rank %d: ", rank); \
      fprintf(stderr, __VA_ARGS__);       \
      fprintf(stderr, "\n");              \
      exit(1);                            \
    }                                     \
  } while (0)
#define CUDA(call) CHECK((call) == cudaSuccess, "%s failed", #call)
#define NCCL(call)                                                        \
  do {                                                                    \
    ncclResult_t r_ = (call);                                             \
    CHECK(r_ == ncclSuccess, "%s: %s", #call, N(ncclGetErrorString)(r_)); \
  } while (0)

#endif
