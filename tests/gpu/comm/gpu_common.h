/* What the GPU tests share: skipping where there is no NCCL or too few GPUs, forking one
 * worker per rank before any CUDA call, a rank's GPU and stream, and plain-C checks (the GPU
 * host has no cmocka). Every test is bounded: the parent kills workers past its limit. */
#ifndef NCCLSHIM_GPU_COMMON_H
#define NCCLSHIM_GPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "ncclshim/comm.h"
#include "ncclshim/cuda.h"

enum { GPU_PASS = 0, GPU_FAIL = 1, GPU_SKIP = 77 };

/* Exit 77 with a reason unless the default NCCL is loaded and at least `need` GPUs are
 * visible (counted in a child, so that this process may still fork workers). Returns the
 * number of GPUs. */
int gpu_require(int need);

/* A rank's view: the default NCCL, the default CUDA driver, its device current, a stream. */
typedef struct gpu_rank {
  int rank, nranks;
  ncclUniqueId id;
  ncclshim_nccl *nccl;
  const ncclshim_nccl_table *t;
  ncclshim_cuda *cuda;
  const ncclshim_cuda_table *cu;
  CUstream stream;
} gpu_rank;

/* cuInit, device `device` current, a stream; GPU_FAIL with a message on failure. */
int gpu_open(gpu_rank *r, int device);

/* Fork `nranks` workers (rank i on GPU i), then make the unique id here and send it to them;
 * each runs fn and exits with its result. Waits at most limit_s for all of them (killing the
 * rest after that) and returns GPU_PASS only if every worker passed; GPU_SKIP if any skipped
 * and none failed. */
typedef int (*gpu_rank_fn)(gpu_rank *r, void *arg);
int gpu_run_ranks(int nranks, gpu_rank_fn fn, void *arg, int limit_s);

/* The one argument of a test run as blocking or not ("blocking" or "nonblocking"): 1 or 0;
 * -1 after printing the usage. */
int gpu_blocking_arg(int argc, char **argv);
/* Rank r's communicator, blocking or not, READY after a bounded wait (a non-blocking one may
 * still be INITIALIZING when the init returns); GPU_FAIL printed when any step fails. */
int gpu_ready_comm(gpu_rank *r, int blocking, int timeout_ms, ncclshim_comm **comm);

/* Wait for `pid` at most limit_ms: its exit code, or -1 after killing it (printed). */
int gpu_wait_child(int pid, int limit_ms, const char *what);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t gpu_now_ms(void);
/* Read exactly `size` bytes (EINTR retried); 0, or -1 on EOF or error. */
int gpu_read_all(int fd, void *data, size_t size);
/* A loopback port nothing listens on right now (the kernel's choice for port 0); -1 on error. */
int gpu_free_port(void);

/* Print "rank R: FAIL ..." with ncclshim's last message and return GPU_FAIL from the
 * enclosing function. */
#define GPU_CHECK(r, cond, ...)                                \
  do {                                                         \
    if (!(cond)) {                                             \
      gpu_report((r), __FILE__, __LINE__, #cond, __VA_ARGS__); \
      return GPU_FAIL;                                         \
    }                                                          \
  } while (0)
/* A status that must be OK. */
#define GPU_OK(r, call) GPU_CHECK((r), (call) == NCCLSHIM_OK, "%s", #call)
/* A CUresult that must be success. */
#define GPU_CU(r, call) GPU_CHECK((r), (call) == NCCLSHIM_CUDA_SUCCESS, "%s", #call)

void gpu_report(const gpu_rank *r, const char *file, int line, const char *cond, const char *format,
                ...) __attribute__((format(printf, 5, 6)));

/* Device buffers of `count` floats, filled from the host, and a check of one against
 * expected(rank, nranks, i); the first mismatch is printed. */
int gpu_fill(gpu_rank *r, void *device, size_t count, float (*value)(int rank, size_t i));
int gpu_expect(gpu_rank *r, const void *device, size_t count, const char *what,
               float (*expected)(int nranks, size_t i));

/* The values the tests reduce: rank r holds (r + 1) * (i % 7 + 1); the sum over n ranks. */
float gpu_rank_value(int rank, size_t i);
float gpu_sum_value(int nranks, size_t i);

#endif
