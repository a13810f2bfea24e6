/* One rank of a killed-rank case. Both ranks create the communicator and loop over
 * all-reduces, each waited for with a deadline; the harness SIGKILLs rank 1. Rank 0 must
 * see the failure from a bounded wait, abort within the abort deadline, free and destroy
 * without hanging, and exit cleanly; it measures all of it and reports to the harness. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_faults.h"
#include "ncclshim/symmem.h"

/* All-reduces before a rank says it is looping; how long each rank loops at most. */
enum { WARMUP = 5, RANK0_LOOP_MS = 20000, RANK1_LOOP_MS = 40000 };

typedef struct buffers {
  ncclshim_symmem *send_mem, *recv_mem; /* symmetric windows, or NULL */
  CUdeviceptr send, recv;
} buffers;

static void send_report(int fd, fault_report *report) {
  report->at_ms = gpu_now_ms();
  if (write(fd, report, sizeof(*report)) != (ssize_t)sizeof(*report))
    printf("rank %d: the harness is gone\n", report->rank);
}

static void tell(int fd, int rank, report_kind kind) {
  fault_report report = {.rank = rank, .kind = kind};
  send_report(fd, &report);
}

static int alloc_buffers(gpu_rank *r, ncclshim_comm *comm, int symmetric, buffers *b) {
  size_t bytes = COUNT * sizeof(float);
  if (symmetric) {
    ncclshim_status got = ncclshim_symmem_alloc(comm, bytes, r->stream, WAIT_MS, &b->send_mem);
    if (got == NCCLSHIM_UNAVAILABLE) return GPU_SKIP; /* windows do not register here */
    GPU_OK(r, got);
    GPU_OK(r, ncclshim_symmem_alloc(comm, bytes, r->stream, WAIT_MS, &b->recv_mem));
    b->send = (CUdeviceptr)(uintptr_t)ncclshim_symmem_ptr(b->send_mem);
    b->recv = (CUdeviceptr)(uintptr_t)ncclshim_symmem_ptr(b->recv_mem);
  } else {
    GPU_CU(r, r->cu->cuMemAlloc(&b->send, bytes));
    GPU_CU(r, r->cu->cuMemAlloc(&b->recv, bytes));
  }
  GPU_CU(r, r->cu->cuMemsetD8(b->send, 0, bytes));
  return GPU_PASS;
}

/* Give back what alloc_buffers took; the first failure goes into `problem`. */
static void free_buffers(gpu_rank *r, buffers *b, fault_report *report) {
  ncclshim_status status = ncclshim_symmem_free(b->send_mem, WAIT_MS);
  if (status == NCCLSHIM_OK) status = ncclshim_symmem_free(b->recv_mem, WAIT_MS);
  if (status != NCCLSHIM_OK && !report->problem[0])
    snprintf(report->problem, sizeof(report->problem), "ncclshim_symmem_free: %s",
             ncclshim_last_error());
  if (b->send_mem == NULL && b->send) r->cu->cuMemFree(b->send);
  if (b->recv_mem == NULL && b->recv) r->cu->cuMemFree(b->recv);
}

/* The watchdog of a `watchdog` case (NULL otherwise), watching with WAIT_MS. */
static ncclshim_watchdog *dog;

/* A watched operation: wait for the stream as a blocking program would, until it is idle or
 * the watchdog has failed the communicator (whose abort should release the stream); then the
 * next checked call gives the failure. Bounded by three deadlines. */
static ncclshim_status wait_watched(gpu_rank *r, ncclshim_comm *comm) {
  int64_t until = gpu_now_ms() + 3 * WAIT_MS;
  while (gpu_now_ms() < until) {
    int idle = 0;
    ncclshim_status status = ncclshim_cuda_stream_query(r->cuda, r->stream, &idle);
    if (status != NCCLSHIM_OK) return status;
    if (ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY)
      return ncclshim_comm_check(comm, ncclSuccess, "ncclAllReduce", 0);
    if (idle) return NCCLSHIM_OK;
    struct timespec us = {0, 20000};
    nanosleep(&us, NULL);
  }
  printf("rank %d: the watchdog did not fire within %d ms\n", r->rank, 3 * WAIT_MS);
  return NCCLSHIM_TIMEOUT; /* with no message naming the communicator: recover() fails it */
}

/* All-reduces, each finished with a deadline, until one fails or limit_ms passes. The failing
 * wait goes into the report; OK means no failure was seen. */
static ncclshim_status loop(gpu_rank *r, ncclshim_comm *comm, const buffers *b, int fd,
                            int limit_ms, fault_report *report) {
  int64_t until = gpu_now_ms() + limit_ms;
  for (int i = 0; gpu_now_ms() < until; i++) {
    if (i == WARMUP) tell(fd, r->rank, LOOPING);
    int64_t start = gpu_now_ms();
    ncclResult_t result =
        r->t->ncclAllReduce((const void *)(uintptr_t)b->send, (void *)(uintptr_t)b->recv, COUNT,
                            ncclFloat32, ncclSum, ncclshim_comm_raw(comm), r->stream);
    ncclshim_status status = ncclshim_comm_check(comm, result, "ncclAllReduce", WAIT_MS);
    if (status == NCCLSHIM_OK && dog != NULL) {
      start = gpu_now_ms();
      status = ncclshim_comm_record(comm, r->stream, "ncclAllReduce", COUNT, ncclFloat32);
      if (status == NCCLSHIM_OK) status = wait_watched(r, comm);
    } else if (status == NCCLSHIM_OK) {
      start = gpu_now_ms();
      status = ncclshim_comm_wait_stream(comm, r->cuda, r->stream, WAIT_MS);
    }
    if (status != NCCLSHIM_OK) {
      report->failed_at = gpu_now_ms();
      report->wait_ms = report->failed_at - start;
      return status;
    }
    report->iterations = i + 1;
  }
  return NCCLSHIM_OK;
}

/* After the abort NCCL's kernel should stop; wait for the stream a bounded time. */
static void drain(gpu_rank *r, fault_report *report) {
  int64_t start = gpu_now_ms();
  for (;;) {
    int idle = 0;
    if (ncclshim_cuda_stream_query(r->cuda, r->stream, &idle) != NCCLSHIM_OK) {
      snprintf(report->drained, sizeof(report->drained), "error");
      break;
    }
    if (idle || gpu_now_ms() - start >= DRAIN_MS) {
      snprintf(report->drained, sizeof(report->drained), idle ? "idle" : "stuck");
      break;
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  report->drain_ms = gpu_now_ms() - start;
}

/* The first failed check, for the report. */
#define PROBLEM(report, ...)                                               \
  do {                                                                     \
    if (!(report)->problem[0])                                             \
      snprintf((report)->problem, sizeof((report)->problem), __VA_ARGS__); \
  } while (0)

/* Rank 0 after the failure: check it, abort, drain, free, destroy. */
static void recover(gpu_rank *r, ncclshim_comm *comm, buffers *b, ncclshim_status failure,
                    int after_windows, fault_report *report) {
  report->status = failure;
  snprintf(report->message, sizeof(report->message), "%s", ncclshim_last_error());
  if (failure == NCCLSHIM_OK)
    PROBLEM(report, "no failure seen within %d ms of looping", RANK0_LOOP_MS);
  else if (failure != NCCLSHIM_TIMEOUT && failure != NCCLSHIM_NCCL_ERROR)
    PROBLEM(report, "the wait gave %s", ncclshim_status_name(failure));
  if (report->wait_ms > WAIT_MS + WAIT_MS / 10)
    PROBLEM(report, "the wait took %lld ms for a %d ms deadline", (long long)report->wait_ms,
            WAIT_MS);
  if (failure != NCCLSHIM_OK && strstr(report->message, "communicator rank 0 of 2") == NULL)
    PROBLEM(report, "the message does not name the communicator");
  int64_t start = gpu_now_ms();
  report->abort_status = ncclshim_comm_abort(comm, ABORT_MS);
  report->abort_ms = gpu_now_ms() - start;
  /* With symmetric windows over NVLink, NCCL 2.28's ncclCommAbort was seen not to return
   * while the kernel waits for the dead peer (bench/results/h200x2/faults/faults.md): then what
   * ncclshim promises is to return TIMEOUT at its deadline and let the process go on. */
  int abort_left_running = after_windows && report->abort_status == NCCLSHIM_TIMEOUT;
  if (report->abort_status != NCCLSHIM_OK && !abort_left_running)
    PROBLEM(report, "the abort gave %s: %s", ncclshim_status_name(report->abort_status),
            ncclshim_last_error());
  if (report->abort_ms > ABORT_MS + ABORT_MS / 10)
    PROBLEM(report, "the abort took %lld ms for a %d ms deadline", (long long)report->abort_ms,
            ABORT_MS);
  drain(r, report);
  if (strcmp(report->drained, "idle") == 0) {
    free_buffers(r, b, report);
    ncclshim_cuda_stream_destroy(r->cuda, r->stream);
  } /* else the kernel still runs: the memory is left to the process's exit */
  /* While NCCL's abort still runs on its thread, destroy must refuse at once (not wait). */
  start = gpu_now_ms();
  ncclshim_status destroyed = ncclshim_comm_destroy(comm, WAIT_MS);
  if (abort_left_running ? gpu_now_ms() - start > WAIT_MS / 10 : destroyed != NCCLSHIM_OK)
    PROBLEM(report, "destroy after the abort: %s (%lld ms)", ncclshim_last_error(),
            (long long)(gpu_now_ms() - start));
  ncclshim_comm_free(comm);
  report->passed = report->problem[0] == '\0';
}

int fault_rank(gpu_rank *r, const fault_case *c, int fd) {
  fault_report report = {.rank = r->rank, .kind = RESULT, .phase = "init"};
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = c->watchdog ? NCCLSHIM_COMM_SPLIT_BLOCKING : c->blocking;
  ncclshim_comm *comm = NULL;
  GPU_OK(r, ncclshim_comm_init(r->nccl, r->nranks, &r->id, r->rank, &options, &comm));
  if (c->point == KILL_IN_INIT) tell(fd, r->rank, INIT_STARTED);
  int64_t start = gpu_now_ms();
  ncclshim_status status = ncclshim_comm_wait(comm, WAIT_MS);
  buffers b = {0};
  if (status != NCCLSHIM_OK) {
    report.failed_at = gpu_now_ms();
    report.wait_ms = report.failed_at - start;
  } else {
    snprintf(report.phase, sizeof(report.phase), "collective");
    if (c->watchdog) {
      GPU_OK(r, ncclshim_watchdog_start(NULL, &dog));
      GPU_OK(r, ncclshim_comm_watch(comm, dog, WAIT_MS));
    }
    int got = alloc_buffers(r, comm, c->point == KILL_AFTER_WINDOWS, &b);
    if (got == GPU_SKIP) { /* rank 0 tells the harness why, which skips the case */
      snprintf(report.problem, sizeof(report.problem), "skip: %s", ncclshim_last_error());
      if (r->rank == 0) send_report(fd, &report);
      ncclshim_watchdog_stop(dog);
      return GPU_SKIP;
    }
    if (got != GPU_PASS) return GPU_FAIL;
    status = loop(r, comm, &b, fd, r->rank == 0 ? RANK0_LOOP_MS : RANK1_LOOP_MS, &report);
  }
  if (r->rank != 0) { /* rank 1 should have been killed by now */
    printf("rank %d: still alive after the loop (%s)\n", r->rank, ncclshim_status_name(status));
    return GPU_FAIL;
  }
  recover(r, comm, &b, status, c->point == KILL_AFTER_WINDOWS, &report);
  ncclshim_watchdog_stop(dog);
  send_report(fd, &report);
  return report.passed ? GPU_PASS : GPU_FAIL;
}
