/* The multi-GPU example's pieces: how it was started, and the work of one rank. */
#ifndef NCCLSHIM_EXAMPLE_ALLREDUCE_H
#define NCCLSHIM_EXAMPLE_ALLREDUCE_H

#include <stddef.h>

#include "ncclshim/comm.h"

/* What one rank does, and with whom. */
typedef struct job {
  int rank, nranks, local_rank; /* local_rank: the GPU on this machine */
  ncclUniqueId id;
  size_t count;   /* floats per buffer */
  int iters;      /* timed repetitions of each collective */
  int timeout_ms; /* every wait: init, each collective's completion, teardown */
  int mode;       /* how hangs are found: MODE_WATCHDOG, MODE_NONBLOCKING, MODE_BLOCKING */
} job;

/* MODE_WATCHDOG: bounded init, blocking collectives watched by a watchdog thread (the
 * fastest that still finds hangs). MODE_NONBLOCKING: a non-blocking communicator, every
 * collective finished by a bounded wait. MODE_BLOCKING: plain blocking (init unbounded; a
 * collective's completion still waited for with a deadline). */
enum { MODE_WATCHDOG = 0, MODE_NONBLOCKING = 1, MODE_BLOCKING = 2 };

/* How run_rank ended; also the worker processes' exit codes. */
enum { RANK_PASSED = 0, RANK_FAILED = 1, RANK_NO_GPU = 2 };

/* Set up the GPU (cuInit, device local_rank), create the communicator, run and check
 * all-reduce and broadcast, print the times, tear down. Call it after any fork(). */
int run_rank(ncclshim_nccl *nccl, const job *job);

/* The number of CUDA devices, asked in a child process so that this one never initialises
 * CUDA (it is about to fork the workers); -1 with the reason in `why` when there is none. */
int count_gpus(char *why, size_t size);

#endif
