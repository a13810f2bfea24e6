/* The fake CUDA driver (tests/fakes/fake_cuda.c, built as libfake-cuda-<variant>.so with the
 * soname libcuda.so.1): what a test can steer and read. It is as strict as the real driver
 * where the real one has been measured (driver 580, H200):
 *   - a call naming a destroyed stream (or a value that was never a stream) prints
 *     "fake cuda: call X with destroyed stream 0x..." on stderr and aborts the process (the
 *     real driver dies of SIGSEGV);
 *   - cuStreamCreate hands out the handle destroyed last (the real one does, 200 of 200);
 *   - a destroyed event, queried, recorded, synchronized or destroyed again:
 *     CUDA_ERROR_CONTEXT_IS_DESTROYED (709), no crash; a value never handed out as an event
 *     aborts like a destroyed stream;
 *   - contexts: one primary context per device (FAKE_CUDA_DEVICES), current per thread with a
 *     stack (cuCtxSetCurrent, cuCtxPushCurrent, cuCtxPopCurrent, cuCtxGetCurrent); streams
 *     and events belong to the context current at their creation (cuStreamGetCtx); an event
 *     recorded on a stream of another context: CUDA_ERROR_INVALID_HANDLE (400);
 *   - the legacy stream (NULL, CU_STREAM_LEGACY) and the per-thread stream
 *     (CU_STREAM_PER_THREAD) are those of the calling thread's current context; with none
 *     current, a call naming them answers CUDA_ERROR_INVALID_CONTEXT (201);
 *   - creating a stream or an event, or allocating memory, needs a current context (201),
 *     and everything but cuDriverGetVersion and cuInit needs cuInit in this process (3);
 *   - capture (cuStreamBeginCapture, cuStreamEndCapture, or fake_cuda_set_capture): an event
 *     recorded on a capturing stream is captured: cuEventQuery on it answers
 *     CUDA_ERROR_CAPTURED_EVENT (907) and invalidates that capture (cuStreamEndCapture then
 *     answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901); cuEventQuery in global capture
 *     mode while any global capture runs invalidates it and answers 900; cuStreamIsCapturing
 *     on the legacy stream while a global capture runs answers 906.
 * Completion: an event's answer is fixed when it is recorded, from its stream's setting (else
 * the process-wide one): complete (0), never until released (600), an error, or complete
 * after a delay. cuStreamQuery answers 600 while an event recorded on the stream is pending.
 *
 * Every control is an exported function (resolve it with dlsym on the fake's handle, or bind
 * them all with fake_cuda_bind, tests/fakes/fake_cuda_client.c). Functions are named by their
 * base name ("cuEventRecord" counts cuEventRecord and any _v2 of it). Everything is
 * thread-safe; fake_cuda_reset is for a test's setup, with no other thread in the fake. */
#ifndef NCCLSHIM_TEST_FAKE_CUDA_H
#define NCCLSHIM_TEST_FAKE_CUDA_H

#include <stdint.h>

#include "ncclshim/cuda_abi.h"

enum {
  FAKE_CUDA_DEVICES = 2,   /* devices, each with its primary context */
  FAKE_CUDA_STREAMS = 512, /* streams alive at once */
  FAKE_CUDA_LOG_SIZE = 256,
  FAKE_CUDA_NAME_SIZE = 48,
  FAKE_CUDA_MAX_ARGS = 6,
  FAKE_CUDA_ANY_RESULT = -1, /* fake_cuda_set_stream_answer: back to the process-wide one */
  FAKE_CUDA_FOREVER = -1,    /* fake_cuda_inject: every call, until injected again */
};

/* One cuGetProcAddress request, as asked (the driver-version tests of tests/cuda). */
typedef struct fake_cuda_request {
  char symbol[FAKE_CUDA_NAME_SIZE];
  int version;
  unsigned long long flags;
  int result; /* what the fake answered */
} fake_cuda_request;

/* Exported object "fake_log": the first calls, by exported name, and the requests. */
typedef struct fake_cuda_log {
  fake_cuda_request requests[FAKE_CUDA_LOG_SIZE];
  int request_count;
  char calls[FAKE_CUDA_LOG_SIZE][FAKE_CUDA_NAME_SIZE]; /* exported name of each call */
  int call_count;
} fake_cuda_log;

/* Exported object "fake_control", set before the calls it steers (single-threaded tests). */
typedef struct fake_cuda_control {
  int not_ready;         /* cuStreamQuery answers NOT_READY (600) this many more times
                            (cuStreamSynchronize clears it) */
  int failing_attribute; /* cuDeviceGetAttribute answers UNKNOWN (999) for this one */
} fake_cuda_control;

/* The arguments of a function's last call, each converted to an integer (a pointer's address,
 * a handle's value), and the thread that made it. */
typedef struct fake_cuda_args {
  int nargs;
  unsigned long long arg[FAKE_CUDA_MAX_ARGS];
  unsigned long thread; /* pthread_self() of the caller */
} fake_cuda_args;

/* The controls, X(return type, name, parameters), each exported as fake_cuda_<name>:
 *   fake_cuda_reset
 *       Everything back to a fresh process's state, except that cuInit stays done: no context
 *       current on the calling thread, every stream destroyed (a stale handle still aborts),
 *       no capture, injection or count; events already made complete (not destroyed); memory still
 *       allocated is freed.
 *   fake_cuda_use_device
 *       cuInit, then `device`'s primary context retained and made current on the calling
 *       thread, as cudaSetDevice does: 0 or the CUresult of the step that failed.
 *   fake_cuda_context
 *       `device`'s primary context (NULL for none such).
 *   fake_cuda_new_stream
 *       A new stream of `device`'s context, the calling thread's current context unchanged
 *       (NULL when it cannot be made); cuStreamDestroy ends it.
 *   fake_cuda_stream_alive
 *       Whether `stream` is alive (created and not destroyed): 1 or 0.
 *   fake_cuda_stream_records
 *       Events recorded on `stream` since it was created (the legacy and per-thread streams:
 *       those of the calling thread's current context).
 *   fake_cuda_set_event_query
 *       What an event recorded from now on answers to cuEventQuery, process-wide: 0
 *       (complete), 600 (never completes until released), or an error such as 719.
 *   fake_cuda_set_stream_answer
 *       The same for events recorded on `stream` from now on, once `after` more of them have
 *       completed normally (after = 0: from the next one on). FAKE_CUDA_ANY_RESULT: back to
 *       the process-wide answer. A "held" stream is one set to 600.
 *   fake_cuda_set_stream_delay
 *       Events recorded on `stream` from now on complete `ms` after their record.
 *   fake_cuda_release_stream
 *       Every event recorded on `stream` so far that is pending completes, and the stream's
 *       answer goes back to the process-wide one.
 *   fake_cuda_complete_all
 *       Every event recorded so far that is pending completes.
 *   fake_cuda_set_stream_query
 *       What cuStreamQuery answers for every stream, instead of its events' state (0: back to
 *       its events' state), e.g. 600 for work the fake never saw (a kernel of the fake NCCL).
 *   fake_cuda_inject
 *       `function` answers `result` doing nothing, for the next `times` calls
 *       (FAKE_CUDA_FOREVER: until injected again; times 0 clears). Only calls naming `stream`
 *       when `on_stream` is 1 (the legacy NULL stream included); any call when it is 0.
 *   fake_cuda_slow
 *       `function` sleeps `ms` before it does anything, on calls naming `stream` when
 *       `on_stream` is 1, on all when 0 (ms 0 clears).
 *   fake_cuda_block_next_record
 *       The next cuEventRecord on `stream` blocks until fake_cuda_release_record(); while it
 *       does, fake_cuda_blocked() is 1.
 *   fake_cuda_blocked, fake_cuda_release_record: see fake_cuda_block_next_record
 *   fake_cuda_count
 *       Calls of `function` (both its ABIs) since the reset; -1 for a name the fake does not
 *       know.
 *   fake_cuda_last_args
 *       The arguments of `function`'s last call: 0, or -1 when it was never called.
 *   fake_cuda_live_events
 *       Events created and not destroyed.
 *   fake_cuda_set_capture
 *       A capture of `stream` as cuStreamBeginCapture makes it (mode 0 global, 1 thread-local,
 *       2 relaxed), or its status set: 1 active, 2 invalidated, 0 ended.
 *   fake_cuda_end_captures
 *       Every capture ends.
 *   fake_cuda_capture_on_record
 *       The next cuEventRecord on `stream` finds a thread-local capture begun just before it
 *       (one begun between a check and the record).
 *   fake_cuda_set_captured_answer
 *       What querying a captured event answers (907, as the driver; another value to test a
 *       caller's handling), and whether it invalidates the capture.
 *   fake_cuda_counter
 *       0: captures invalidated, 1: events recorded into a capture, 2: cuEventQuery calls made
 *       in global capture mode; 3: the mode last passed to
 *       cuThreadExchangeStreamCaptureMode (-1: none).
 *   fake_cuda_live_allocations
 *       Blocks of "device" memory (host memory) allocated and not freed; and all of them
 *       freed.
 */
#define FAKE_CUDA_CONTROLS(X)                                                                    \
  X(void, reset, (void))                                                                         \
  X(int, use_device, (int device))                                                               \
  X(CUcontext, context, (int device))                                                            \
  X(CUstream, new_stream, (int device))                                                          \
  X(int, stream_alive, (CUstream stream))                                                        \
  X(int, stream_records, (CUstream stream))                                                      \
  X(void, set_event_query, (int result))                                                         \
  X(void, set_stream_answer, (CUstream stream, int result, int after))                           \
  X(void, set_stream_delay, (CUstream stream, int ms))                                           \
  X(void, release_stream, (CUstream stream))                                                     \
  X(void, complete_all, (void))                                                                  \
  X(void, set_stream_query, (int result))                                                        \
  X(void, inject, (const char *function, int on_stream, CUstream stream, int result, int times)) \
  X(void, slow, (const char *function, int on_stream, CUstream stream, int ms))                  \
  X(void, block_next_record, (CUstream stream))                                                  \
  X(int, blocked, (void))                                                                        \
  X(void, release_record, (void))                                                                \
  X(int, count, (const char *function))                                                          \
  X(int, last_args, (const char *function, fake_cuda_args *out))                                 \
  X(int, live_events, (void))                                                                    \
  X(void, set_capture, (CUstream stream, int status, int mode))                                  \
  X(void, end_captures, (void))                                                                  \
  X(void, capture_on_record, (CUstream stream))                                                  \
  X(void, set_captured_answer, (int result))                                                     \
  X(int, counter, (int which))                                                                   \
  X(int, live_allocations, (void))                                                               \
  X(void, free_all, (void))

/* Compatibility with the bindings' tests, which set these exported ints directly:
 * fake_capture_result (not 0: what cuStreamIsCapturing answers on a stream that has no
 * capture of its own) and fake_capture_status (what it then writes, when the answer is 0). */

/* All the controls bound, for a test: fake_cuda_bind fills one from the fake loaded at
 * `path` (NULL: $NCCLSHIM_CUDA_LIBRARY), loading it if needed; 0, or -1 with a message on
 * stderr. */
#define FAKE_CUDA_FIELD_(ret, name, params) ret(*name) params;
/* Declared for the fake's own definitions (fake_cuda*.c). */
#define FAKE_CUDA_PROTOTYPE_(ret, name, params) ret fake_cuda_##name params;
typedef struct fake_cuda_api {
  FAKE_CUDA_CONTROLS(FAKE_CUDA_FIELD_)
  fake_cuda_log *log;
  fake_cuda_control *control;
} fake_cuda_api;
int fake_cuda_bind(const char *path, fake_cuda_api *api);

#endif
