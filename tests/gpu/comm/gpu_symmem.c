/* Symmetric memory on every visible GPU (NCCL 2.28+): buffers from ncclMemAlloc registered as
 * symmetric windows (non-NULL), an all-reduce on them with the right sums, registrations
 * made inside a group and completed after it, then deregistration and free.
 *   gpu_symmem blocking|nonblocking */
#include <stdio.h>

#include "ncclshim/diag.h"
#include "gpu_common.h"
#include "ncclshim/symmem.h"

enum { TIMEOUT_MS = 20000, COUNT = (1 << 20) + 3 }; /* not a multiple of 4096 bytes */

static int reduce(gpu_rank *r, ncclshim_comm *comm, ncclshim_symmem *from, ncclshim_symmem *to,
                  const char *what) {
  void *s = ncclshim_symmem_ptr(from), *d = ncclshim_symmem_ptr(to);
  if (gpu_fill(r, s, COUNT, gpu_rank_value) != GPU_PASS) return GPU_FAIL;
  GPU_CU(r, r->cu->cuMemsetD8((CUdeviceptr)(uintptr_t)d, 0xff, COUNT * sizeof(float)));
  ncclResult_t res =
      r->t->ncclAllReduce(s, d, COUNT, ncclFloat32, ncclSum, ncclshim_comm_raw(comm), r->stream);
  GPU_OK(r, ncclshim_comm_check(comm, res, "ncclAllReduce", TIMEOUT_MS));
  GPU_OK(r, ncclshim_comm_wait_stream(comm, r->cuda, r->stream, TIMEOUT_MS));
  return gpu_expect(r, d, COUNT, what, gpu_sum_value);
}

static int check_buffer(gpu_rank *r, const ncclshim_symmem *mem, const char *what) {
  GPU_CHECK(r, ncclshim_symmem_window(mem) != NULL, "%s: window", what);
  GPU_CHECK(r, (uintptr_t)ncclshim_symmem_ptr(mem) % 4096 == 0, "%s: alignment", what);
  size_t size = ncclshim_symmem_size(mem);
  GPU_CHECK(r, size % 4096 == 0 && size >= COUNT * sizeof(float), "%s: size %zu", what, size);
  return GPU_PASS;
}

static int symmetric(gpu_rank *r, void *arg) {
  int blocking = *(const int *)arg;
  ncclshim_comm *comm = NULL;
  if (gpu_ready_comm(r, blocking, TIMEOUT_MS, &comm) != GPU_PASS) return GPU_FAIL;
  size_t bytes = COUNT * sizeof(float);

  ncclshim_symmem *send = NULL, *recv = NULL;
  ncclshim_status got = ncclshim_symmem_alloc(comm, bytes, r->stream, TIMEOUT_MS, &send);
  if (got == NCCLSHIM_UNAVAILABLE) { /* windows do not register here (every rank sees it) */
    printf("rank %d: skip: %s\n", r->rank, ncclshim_last_error());
    GPU_OK(r, ncclshim_comm_destroy(comm, TIMEOUT_MS));
    return GPU_SKIP;
  }
  GPU_OK(r, got);
  GPU_OK(r, ncclshim_symmem_alloc(comm, bytes, r->stream, TIMEOUT_MS, &recv));
  if (check_buffer(r, send, "send") != GPU_PASS || check_buffer(r, recv, "recv") != GPU_PASS ||
      reduce(r, comm, send, recv, "all-reduce on symmetric buffers") != GPU_PASS)
    return GPU_FAIL;

  /* Registered inside a group: the windows exist after the group ends. */
  ncclshim_symmem *a = NULL, *b = NULL;
  GPU_CHECK(r, r->t->ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  GPU_OK(r, ncclshim_symmem_alloc_in_group(comm, bytes, r->stream, &a));
  GPU_OK(r, ncclshim_symmem_alloc_in_group(comm, bytes, r->stream, &b));
  GPU_OK(r, ncclshim_comm_group_end(r->nccl, &comm, 1, TIMEOUT_MS));
  GPU_OK(r, ncclshim_symmem_complete(a, TIMEOUT_MS));
  GPU_OK(r, ncclshim_symmem_complete(b, TIMEOUT_MS));
  if (check_buffer(r, a, "in-group a") != GPU_PASS ||
      check_buffer(r, b, "in-group b") != GPU_PASS ||
      reduce(r, comm, a, b, "all-reduce on buffers registered in a group") != GPU_PASS)
    return GPU_FAIL;

  GPU_OK(r, ncclshim_symmem_free(a, TIMEOUT_MS));
  GPU_OK(r, ncclshim_symmem_free(b, TIMEOUT_MS));
  GPU_OK(r, ncclshim_symmem_free(send, TIMEOUT_MS));
  GPU_OK(r, ncclshim_symmem_free(recv, TIMEOUT_MS));
  GPU_OK(r, ncclshim_comm_destroy(comm, TIMEOUT_MS));
  ncclshim_comm_free(comm);
  printf("rank %d/%d: %s communicator: symmetric windows, all-reduce sums OK\n", r->rank, r->nranks,
         blocking ? "blocking" : "non-blocking");
  return GPU_PASS;
}

int main(int argc, char **argv) {
  int blocking = gpu_blocking_arg(argc, argv);
  if (blocking < 0) return GPU_FAIL;
  int gpus = gpu_require(2);
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  if (!ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY)) {
    char why[256];
    printf("skip: no symmetric memory: %s\n",
           ncclshim_nccl_capability_reason(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY, why, sizeof(why)));
    return GPU_SKIP;
  }
  return gpu_run_ranks(gpus, symmetric, &blocking, 90);
}
