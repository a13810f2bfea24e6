/* The communicator tests' view of the fakes: one fake libnccl variant at a time, its
 * behaviour switches (tests/fakes/fake_nccl.h), and the fake libcuda's. */
#ifndef NCCLSHIM_TEST_COMM_FAKES_H
#define NCCLSHIM_TEST_COMM_FAKES_H

#include <stdint.h>

#include "tests/fakes/fake_cuda.h"
#include "ncclshim/comm.h"

/* Open fake variant `variant` ("2.28.9", ...) explicitly, make it the one the helpers below
 * steer, reset it and switch its behaviour on (live). */
ncclshim_nccl *fake_open(const char *variant);
/* A handle whose open failed (a path that does not exist): no NCCL behind it. */
ncclshim_nccl *open_absent(void);
const char *fake_current_path(void);

void fake_live(int on);
void fake_async(int in_progress_polls, int final_result);
void fake_abort_hang(int on);
int fake_abort_returns(void);
/* Wait until ncclCommAbort has returned `count` times or timeout_ms passed; the count. */
int fake_wait_abort_returns(int count, int timeout_ms);
void fake_null_window(int on);
void fake_peer_lost(int polls, int loss);
void fake_abort_delay(int ms);
void fake_last_error(const char *text);
void fake_inject(const char *function, int result, int times);
int fake_count(const char *function);
int fake_seq(const char *function);
int fake_allocations(void);
int fake_windows(void);

/* The address of `name` in the loaded library at `path`; fails the test when either is missing. */
void *fake_symbol(const char *path, const char *name);

/* The fake driver (NCCLSHIM_CUDA_LIBRARY, tests/fakes/fake_cuda.h): its controls, loaded
 * with it; fake_cuda_fresh() resets it and makes device 0 current on the calling thread
 * (fake_open does the latter too, as a CUDA program has a context). */
const fake_cuda_api *cuda_fake(void);
void fake_cuda_fresh(void);
/* cuStreamIsCapturing's answer on streams without a capture, cuStreamQuery's on every
 * stream (0: as its events say). */
void fake_cuda_capture(int result, int status);
void fake_cuda_query(int result);
/* What events recorded from now on answer to cuEventQuery (0 fired, 600 never fires),
 * cuEventRecord's answer, and the calls counted since the reset: create 0, destroy 1,
 * record 2, query 3. */
void fake_cuda_event_query(int result);
void fake_cuda_record_result(int result);
int fake_cuda_events(int which);

/* A 2-rank communicator (rank 0) on the current fake, `blocking` as ncclshim_comm_options
 * takes it: READY (blocking) or INITIALIZING (non-blocking or split-blocking, with the fake's
 * async script as it is); asserts success. */
ncclshim_comm *fake_comm(ncclshim_nccl *nccl, int blocking);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t now_ms(void);

/* The message contains `part`, or the test fails showing both. */
#define assert_message(part) assert_message_((part), __FILE__, __LINE__)
void assert_message_(const char *part, const char *file, int line);

#endif
