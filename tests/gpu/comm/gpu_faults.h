/* A rank killed while its peer works (tests/gpu/comm/gpu_faults.c): what a case is, what the
 * ranks tell the harness, and the work of one rank (gpu_faults_rank.c). */
#ifndef NCCLSHIM_GPU_FAULTS_H
#define NCCLSHIM_GPU_FAULTS_H

#include <stdint.h>

#include "gpu_common.h"

/* Short deadlines keep the whole GPU run within minutes; the checks allow +10 % on WAIT_MS. */
enum { WAIT_MS = 3000, ABORT_MS = 10000, DRAIN_MS = 3000, COUNT = 1 << 20 };

/* Where rank 1 dies: looping over all-reduces, during a non-blocking init, or looping over
 * all-reduces on symmetric windows both ranks registered. */
typedef enum fault_point { KILL_IN_COLLECTIVE, KILL_IN_INIT, KILL_AFTER_WINDOWS } fault_point;

typedef struct fault_case {
  int blocking;
  int watchdog; /* NCCLSHIM_COMM_SPLIT_BLOCKING, watched (blocking is then 0) */
  fault_point point;
  int spawn; /* independent processes joined by NCCL_COMM_ID, rather than forked */
} fault_case;

/* What a rank writes to the harness's pipe (one write, below PIPE_BUF: never interleaved). */
typedef enum report_kind { INIT_STARTED = 1, LOOPING = 2, RESULT = 3 } report_kind;

typedef struct fault_report {
  int rank;
  report_kind kind;
  int64_t at_ms; /* CLOCK_MONOTONIC, shared by the processes of one machine */
  /* RESULT (rank 0) only: */
  int passed;         /* every check of rank 0 held */
  char phase[16];     /* where the failure showed: "init" or "collective" */
  int status;         /* the failing wait's ncclshim_status */
  int64_t wait_ms;    /* how long that wait took */
  int64_t failed_at;  /* when it returned */
  int abort_status;   /* ncclshim_comm_abort's */
  int64_t abort_ms;   /* how long it took */
  char drained[16];   /* the stream after the abort: "idle", "stuck" (frees skipped), "error" */
  int64_t drain_ms;   /* how long the stream took to drain */
  int iterations;     /* all-reduces that completed */
  char message[1536]; /* the failing wait's message */
  char problem[512];  /* the first check that failed, if any */
} fault_report;

/* "blocking", "nonblocking" or "watchdog". */
const char *fault_kind(const fault_case *c);

/* One rank of the case: GPU, communicator, the work, and for rank 0 the measures, written to
 * `fd`. Returns the process's exit code. */
int fault_rank(gpu_rank *r, const fault_case *c, int fd);

#endif
