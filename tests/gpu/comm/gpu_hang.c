/* A rank that never joins: rank 0 of a 2-rank non-blocking communicator waits with a deadline,
 * must see TIMEOUT within the deadline + 10 %, abort (on its own thread, bounded), and its
 * process must then exit cleanly and in bounded time. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_common.h"

enum { WAIT_MS = 5000, ABORT_MS = 15000 };

static int lonely_rank(void) {
  gpu_rank r = {.rank = 0, .nranks = 2};
  unsetenv("NCCL_COMM_ID"); /* the id comes from here, with its root in this process */
  if (gpu_open(&r, 0) != GPU_PASS) return GPU_FAIL;
  GPU_OK(&r, ncclshim_nccl_check(r.nccl, r.t->ncclGetUniqueId(&r.id), "ncclGetUniqueId"));
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = 0;
  ncclshim_comm *comm = NULL;
  GPU_OK(&r, ncclshim_comm_init(r.nccl, 2, &r.id, 0, &options, &comm));
  int64_t start = gpu_now_ms();
  ncclshim_status status = ncclshim_comm_wait(comm, WAIT_MS);
  int64_t waited = gpu_now_ms() - start;
  GPU_CHECK(&r, status == NCCLSHIM_TIMEOUT, "the wait gave %s", ncclshim_status_name(status));
  GPU_CHECK(&r, waited >= WAIT_MS && waited <= WAIT_MS + WAIT_MS / 10,
            "timed out after %lld ms for a %d ms deadline", (long long)waited, WAIT_MS);
  GPU_CHECK(&r, ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_INITIALIZING, "still initializing");
  start = gpu_now_ms();
  status = ncclshim_comm_abort(comm, ABORT_MS);
  int64_t aborting = gpu_now_ms() - start;
  GPU_CHECK(&r, status == NCCLSHIM_OK, "the abort gave %s", ncclshim_status_name(status));
  GPU_CHECK(&r, ncclshim_comm_state_of(comm) == NCCLSHIM_COMM_ABORTED, "aborted");
  ncclshim_comm_free(comm);
  printf(
      "rank 0 of 2, rank 1 never started: timeout detected after %lld ms (deadline %d ms), "
      "aborted in %lld ms\n",
      (long long)waited, WAIT_MS, (long long)aborting);
  return GPU_PASS;
}

int main(void) {
  gpu_require(1);
  if (!ncclshim_nccl_has(ncclshim_nccl_default(), NCCLSHIM_CAP_NONBLOCKING_INIT)) {
    printf("skip: this NCCL has no non-blocking communicators\n");
    return GPU_SKIP;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int rc = lonely_rank();
    fflush(stdout);
    exit(rc); /* a clean exit: atexit handlers and NCCL's own teardown run */
  }
  int rc = gpu_wait_child(pid, WAIT_MS + ABORT_MS + 10000, "the lonely rank");
  if (rc != GPU_PASS) printf("FAIL: the surviving process exited with %d\n", rc);
  return rc == GPU_PASS ? GPU_PASS : GPU_FAIL;
}
