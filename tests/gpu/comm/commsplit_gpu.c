/* One case of tests/gpu/comm/commsplit.sh on the GPU host: a one-rank NCCLSHIM_COMM_SPLIT_BLOCKING
 * communicator, initialised, waited for, its child used by one all-reduce, then destroyed, on
 * whatever NCCL_COMM_BLOCKING the environment gives. Prints one CSV line:
 *   case,verdict,destroy_status,state_after,destroy_ms
 * verdict `ok` when destroy returned OK and the communicator is DESTROYED (under
 * NCCL_COMM_BLOCKING=0 destroy once answered OK while the state stayed ready). Exit 0 ok,
 * 1 FAIL, 77 no GPU or no NCCL. */
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

static int one(gpu_rank *r, void *arg) {
  const char *name = arg;
  ncclshim_comm_options o = NCCLSHIM_COMM_OPTIONS_INIT;
  o.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  ncclshim_comm *comm = NULL;
  GPU_OK(r, ncclshim_comm_init(r->nccl, 1, &r->id, 0, &o, &comm));
  GPU_OK(r, ncclshim_comm_wait(comm, 20000));
  CUdeviceptr a = 0, b = 0;
  GPU_CHECK(r, r->cu->cuMemAlloc(&a, 4096) == 0 && r->cu->cuMemAlloc(&b, 4096) == 0, "cuMemAlloc");
  ncclResult_t res = r->t->ncclAllReduce((void *)a, (void *)b, 1024, ncclFloat32, ncclSum,
                                         ncclshim_comm_raw(comm), (cudaStream_t)r->stream);
  GPU_OK(r, ncclshim_comm_check(comm, res, "ncclAllReduce", 20000));
  GPU_OK(r, ncclshim_comm_wait_stream(comm, r->cuda, r->stream, 20000));
  int64_t start = gpu_now_ms();
  ncclshim_status status = ncclshim_comm_destroy(comm, 20000);
  int64_t took = gpu_now_ms() - start;
  ncclshim_comm_state state = ncclshim_comm_state_of(comm);
  int ok = status == NCCLSHIM_OK && state == NCCLSHIM_COMM_DESTROYED;
  char why[512];
  snprintf(why, sizeof(why), "%s", ok ? "" : ncclshim_last_error());
  for (char *c = why; *c; c++)
    if (*c == ',' || *c == '\n') *c = ';'; /* one CSV field */
  printf("%s,%s%s,%s,%s,%lld\n", name, ok ? "ok" : "FAIL: ", why, ncclshim_status_name(status),
         ncclshim_comm_state_name(state), (long long)took);
  fflush(stdout);
  if (!ok) ncclshim_comm_abort(comm, 10000);
  ncclshim_comm_free(comm);
  r->cu->cuMemFree(a);
  r->cu->cuMemFree(b);
  return ok ? GPU_PASS : GPU_FAIL;
}

int main(int argc, char **argv) {
  gpu_require(1);
  return gpu_run_ranks(1, one, argc > 1 ? argv[1] : (void *)"split", 60);
}
