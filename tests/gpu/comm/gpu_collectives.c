/* All-reduce and broadcast on every visible GPU, one process each, through a blocking or a
 * non-blocking communicator: plain calls and a group, each finished with a bounded wait and
 * checked on the host; then the collective teardown.
 *   gpu_collectives blocking|nonblocking */
#include <stdio.h>

#include "gpu_common.h"

enum { TIMEOUT_MS = 20000, COUNT = 1 << 20 };

static float root_value(int nranks, size_t i) {
  (void)nranks;
  return gpu_rank_value(0, i);
}

static int work(gpu_rank *r, ncclshim_comm *comm, int blocking, CUdeviceptr send, CUdeviceptr recv,
                CUdeviceptr bcast) {
  const ncclshim_nccl_table *t = r->t;
  ncclComm_t raw = ncclshim_comm_raw(comm);
  void *s = (void *)(uintptr_t)send, *d = (void *)(uintptr_t)recv, *b = (void *)(uintptr_t)bcast;
  if (gpu_fill(r, s, COUNT, gpu_rank_value) != GPU_PASS) return GPU_FAIL;
  GPU_CU(r, r->cu->cuMemsetD8(recv, 0xff, COUNT * sizeof(float)));

  ncclResult_t res = t->ncclAllReduce(s, d, COUNT, ncclFloat32, ncclSum, raw, r->stream);
  GPU_CHECK(r, res == ncclSuccess || (!blocking && res == ncclInProgress), "ncclAllReduce: %d",
            res);
  GPU_OK(r, ncclshim_comm_check(comm, res, "ncclAllReduce", TIMEOUT_MS));
  GPU_OK(r, ncclshim_comm_wait_stream(comm, r->cuda, r->stream, TIMEOUT_MS));
  if (gpu_expect(r, d, COUNT, "all-reduce", gpu_sum_value) != GPU_PASS) return GPU_FAIL;

  /* The same in a group, with a broadcast from rank 0 beside it. */
  GPU_CU(r, r->cu->cuMemsetD8(recv, 0xff, COUNT * sizeof(float)));
  GPU_CU(r, r->cu->cuMemsetD8(bcast, 0xff, COUNT * sizeof(float)));
  GPU_CHECK(r, t->ncclGroupStart() == ncclSuccess, "ncclGroupStart");
  res = t->ncclAllReduce(s, d, COUNT, ncclFloat32, ncclSum, raw, r->stream);
  GPU_OK(r, ncclshim_nccl_check(r->nccl, res, "ncclAllReduce"));
  res = t->ncclBroadcast(s, b, COUNT, ncclFloat32, 0, raw, r->stream);
  GPU_OK(r, ncclshim_nccl_check(r->nccl, res, "ncclBroadcast"));
  GPU_OK(r, ncclshim_comm_group_end(r->nccl, &comm, 1, TIMEOUT_MS));
  GPU_OK(r, ncclshim_comm_wait_stream(comm, r->cuda, r->stream, TIMEOUT_MS));
  if (gpu_expect(r, d, COUNT, "grouped all-reduce", gpu_sum_value) != GPU_PASS ||
      gpu_expect(r, b, COUNT, "grouped broadcast", root_value) != GPU_PASS)
    return GPU_FAIL;
  return GPU_PASS;
}

static int collectives(gpu_rank *r, void *arg) {
  int blocking = *(const int *)arg;
  ncclshim_comm *comm = NULL;
  if (gpu_ready_comm(r, blocking, TIMEOUT_MS, &comm) != GPU_PASS) return GPU_FAIL;

  CUdeviceptr send = 0, recv = 0, bcast = 0;
  GPU_CU(r, r->cu->cuMemAlloc(&send, COUNT * sizeof(float)));
  GPU_CU(r, r->cu->cuMemAlloc(&recv, COUNT * sizeof(float)));
  GPU_CU(r, r->cu->cuMemAlloc(&bcast, COUNT * sizeof(float)));
  int rc = work(r, comm, blocking, send, recv, bcast);
  r->cu->cuMemFree(send);
  r->cu->cuMemFree(recv);
  r->cu->cuMemFree(bcast);
  if (rc != GPU_PASS) {
    ncclshim_comm_abort(comm, TIMEOUT_MS);
    ncclshim_comm_free(comm);
    return rc;
  }
  GPU_OK(r, ncclshim_comm_destroy(comm, TIMEOUT_MS));
  GPU_CHECK(r, ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_DESTROYED, "destroyed");
  GPU_OK(r, ncclshim_comm_destroy(comm, TIMEOUT_MS)); /* idempotent */
  GPU_OK(r, ncclshim_comm_abort(comm, TIMEOUT_MS));
  ncclshim_comm_free(comm);
  printf("rank %d/%d: %s communicator: all-reduce, grouped all-reduce + broadcast OK\n", r->rank,
         r->nranks, blocking ? "blocking" : "non-blocking");
  return GPU_PASS;
}

int main(int argc, char **argv) {
  int blocking = gpu_blocking_arg(argc, argv);
  if (blocking < 0) return GPU_FAIL;
  int gpus = gpu_require(2);
  if (!blocking && !ncclshim_nccl_has(ncclshim_nccl_default(), NCCLSHIM_CAP_NONBLOCKING_INIT)) {
    printf("skip: this NCCL has no non-blocking communicators\n");
    return GPU_SKIP;
  }
  return gpu_run_ranks(gpus, collectives, &blocking, 90);
}
