/* What the GPU benchmark programs share: N(f) names an NCCL function directly, or through
 * ncclshim's table when built with -DVIA_TABLE (the program sets `table`), the checks that
 * end the process with a message naming the rank, and the hand-down of a unique id. Include
 * after the system headers. */
#ifndef NCCLSHIM_BENCH_CHECKS_H
#define NCCLSHIM_BENCH_CHECKS_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fail_line.h"

#ifdef VIA_TABLE
#include "ncclshim/ncclshim.h"
static const ncclshim_nccl_table *table;
#define N(f) (table->f)
#else
#define N(f) f
#endif

static int rank;

#define CHECK(ok, ...) CHECK_OR(exit(1), "rank", rank, ok, __VA_ARGS__)
#define CUDA(call) CHECK((call) == cudaSuccess, "%s failed", #call)
#define NCCL(call)                                                        \
  do {                                                                    \
    ncclResult_t r_ = (call);                                             \
    CHECK(r_ == ncclSuccess, "%s: %s", #call, N(ncclGetErrorString)(r_)); \
  } while (0)

/* The communicator's unique id, one process per rank: rank 0 makes it and writes it down
 * each other rank's pipe (pipes[r][1]); every other rank reads its own (pipes[rank][0]). */
static inline ncclUniqueId shared_id(int nranks, int (*pipes)[2]) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL(N(ncclGetUniqueId)(&id));
    for (int r = 1; r < nranks; r++)
      CHECK(write(pipes[r][1], &id, sizeof(id)) == sizeof(id), "pipe");
  } else {
    CHECK(read(pipes[rank][0], &id, sizeof(id)) == sizeof(id), "pipe");
  }
  return id;
}

#endif
