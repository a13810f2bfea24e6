/* A job that hangs on purpose, for the flight recorder on the GPU host
 * (tests/gpu/dropin/dropin.sh). A plain NCCL program (real nccl.h, cuda_runtime.h): two
 * processes, one GPU each, all-reduce after all-reduce; rank STOP stops issuing after
 * STOP_AFTER of them, the other issues one more and blocks waiting for it. The parent then
 * sends SIGNAL (the recorder's dump signal) to both, waits, and kills them: the dumps say who
 * stopped where.
 *   stop_rank STOP STOP_AFTER SIGNAL   exit 0 when both ranks reached their stall and were
 *                                       signalled; 77 with fewer than 2 GPUs */
#define _POSIX_C_SOURCE 200809L /* kill, pause */
#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fail_line.h"

#define CHECK(ok, ...) CHECK_OR(_exit(1), "rank", rank, ok, __VA_ARGS__)

static int rank = -1;

/* One process per GPU; `ready` gets a byte once this rank has reached its stall. */
static void child(int stop, int stop_after, int id_pipe[2], int ready) {
  ncclUniqueId id;
  if (rank == 0) {
    CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    CHECK(write(id_pipe[1], &id, sizeof(id)) == sizeof(id), "pipe");
  } else {
    CHECK(read(id_pipe[0], &id, sizeof(id)) == sizeof(id), "pipe");
  }
  CHECK(cudaSetDevice(rank) == cudaSuccess, "cudaSetDevice");
  const size_t count = 1 << 20;
  float *buf;
  cudaStream_t stream;
  CHECK(cudaMalloc((void **)&buf, count * sizeof(float)) == cudaSuccess, "cudaMalloc");
  CHECK(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, 2, id, rank) == ncclSuccess, "ncclCommInitRank");
  for (int i = 1;; i++) {
    if (rank == stop && i > stop_after) {
      printf("rank %d: stopped issuing after all-reduce %d\n", rank, stop_after);
      fflush(stdout);
      CHECK(write(ready, "s", 1) == 1, "pipe");
      for (;;) pause(); /* alive, issuing nothing */
    }
    CHECK(ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, stream) == ncclSuccess,
          "ncclAllReduce %d", i);
    if (i == stop_after + 1) {
      printf("rank %d: issued all-reduce %d, now waiting for it\n", rank, i);
      fflush(stdout);
      CHECK(write(ready, "w", 1) == 1, "pipe");
    }
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "cudaStreamSynchronize");
  }
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s STOP STOP_AFTER SIGNAL\n", argv[0]);
    return 2;
  }
  int stop = atoi(argv[1]), stop_after = atoi(argv[2]), signo = atoi(argv[3]);
  int id_pipe[2], ready[2];
  if (pipe(id_pipe) != 0 || pipe(ready) != 0) return 1;
  pid_t pids[2];
  for (int r = 0; r < 2; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      rank = r;
      child(stop, stop_after, id_pipe, ready[1]);
    }
  }
  /* Both stalled (or a child died): a byte from each, or end of file. */
  close(ready[1]);
  char byte;
  int stalled = 0;
  while (stalled < 2 && read(ready[0], &byte, 1) == 1) stalled++;
  int devices = 0;
  printf("parent: %d of 2 ranks stalled\n", stalled);
  fflush(stdout);
  if (stalled == 2) {
    sleep(2); /* the waiting rank is inside its wait for the all-reduce that never completes */
    for (int r = 0; r < 2; r++) kill(pids[r], signo);
    sleep(2); /* the dumps */
  }
  for (int r = 0; r < 2; r++) kill(pids[r], SIGKILL);
  for (int r = 0; r < 2; r++) waitpid(pids[r], NULL, 0);
  if (stalled < 2 && (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2)) return 77;
  return stalled == 2 ? 0 : 1;
}
