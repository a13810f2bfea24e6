/* Bad arguments to real collectives: NCCL refuses them, and the checked call reports
 * NCCL_ERROR naming the call and the code, with NCCL's own last-error text; the communicator
 * stays usable. One GPU, a one-rank blocking communicator. (NULL buffers are not tried: NCCL
 * checks pointers only with NCCL_CHECK_POINTERS=1, otherwise the kernel would fault.) */
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

enum { TIMEOUT_MS = 20000, COUNT = 1024 };

/* The message of a refused call carries its name, the code and NCCL's last error. */
static int refused(gpu_rank *r, ncclResult_t res, ncclshim_status status, const char *call) {
  char message[2048];
  snprintf(message, sizeof(message), "%s", ncclshim_last_error());
  const char *last = r->t->ncclGetLastError(NULL);
  char expected[128];
  snprintf(expected, sizeof(expected), "%s failed: ncclInvalidArgument (4)", call);
  GPU_CHECK(r, res == ncclInvalidArgument, "%s returned %d", call, res);
  GPU_CHECK(r, status == NCCLSHIM_NCCL_ERROR, "status %s", ncclshim_status_name(status));
  GPU_CHECK(r, strstr(message, expected) != NULL, "message: %s", message);
  GPU_CHECK(r, last != NULL && last[0] != '\0', "NCCL's last error is empty");
  GPU_CHECK(r, strstr(message, last) != NULL, "message lacks NCCL's last error \"%s\"", last);
  printf("  %s\n", message);
  return GPU_PASS;
}

static float one_rank(int nranks, size_t i) { return gpu_sum_value(nranks, i); }

static int run(gpu_rank *r, ncclshim_comm *comm, void *send, void *recv) {
  ncclComm_t raw = ncclshim_comm_raw(comm);
  ncclResult_t res =
      r->t->ncclAllReduce(send, recv, COUNT, (ncclDataType_t)99, ncclSum, raw, r->stream);
  if (refused(r, res, ncclshim_nccl_check(r->nccl, res, "ncclAllReduce"), "ncclAllReduce") !=
      GPU_PASS)
    return GPU_FAIL;
  res = r->t->ncclBroadcast(send, recv, COUNT, ncclFloat32, 5, raw, r->stream); /* no rank 5 */
  if (refused(r, res, ncclshim_comm_check(comm, res, "ncclBroadcast", TIMEOUT_MS),
              "ncclBroadcast") != GPU_PASS)
    return GPU_FAIL;
  /* Still usable. */
  GPU_CHECK(r, ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_READY, "ready after the refusals");
  if (gpu_fill(r, send, COUNT, gpu_rank_value) != GPU_PASS) return GPU_FAIL;
  res = r->t->ncclAllReduce(send, recv, COUNT, ncclFloat32, ncclSum, raw, r->stream);
  GPU_OK(r, ncclshim_comm_check(comm, res, "ncclAllReduce", TIMEOUT_MS));
  GPU_OK(r, ncclshim_comm_wait_stream(comm, r->cuda, r->stream, TIMEOUT_MS));
  return gpu_expect(r, recv, COUNT, "all-reduce after the refusals", one_rank);
}

int main(void) {
  gpu_require(1);
  gpu_rank r = {.rank = 0, .nranks = 1};
  if (gpu_open(&r, 0) != GPU_PASS) return GPU_FAIL;
  GPU_OK(&r, ncclshim_nccl_check(r.nccl, r.t->ncclGetUniqueId(&r.id), "ncclGetUniqueId"));
  ncclshim_comm *comm = NULL;
  GPU_OK(&r, ncclshim_comm_init(r.nccl, 1, &r.id, 0, NULL, &comm));
  CUdeviceptr send = 0, recv = 0;
  GPU_CU(&r, r.cu->cuMemAlloc(&send, COUNT * sizeof(float)));
  GPU_CU(&r, r.cu->cuMemAlloc(&recv, COUNT * sizeof(float)));
  printf("refused as expected:\n");
  int rc = run(&r, comm, (void *)(uintptr_t)send, (void *)(uintptr_t)recv);
  r.cu->cuMemFree(send);
  r.cu->cuMemFree(recv);
  if (rc == GPU_PASS)
    GPU_OK(&r, ncclshim_comm_destroy(comm, TIMEOUT_MS));
  else
    ncclshim_comm_abort(comm, TIMEOUT_MS);
  ncclshim_comm_free(comm);
  return rc;
}
