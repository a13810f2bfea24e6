/* The fake CUDA driver's inside (tests/fakes/fake_cuda*.c): its objects, its one lock, and
 * the functions it knows beyond ncclshim's list. Not for the tests: they use fake_cuda.h. */
#ifndef NCCLSHIM_TEST_FAKE_CUDA_STATE_H
#define NCCLSHIM_TEST_FAKE_CUDA_STATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "fake_cuda.h"
#include "ncclshim/cuda_functions.h"

/* Driver functions the fake exports that ncclshim's list (NCCLSHIM_CUDA_FUNCTIONS) does not
 * bind, in the list's form. A row added to the list moves out of here (the build says so: the
 * fake then defines it twice). */
/* clang-format off */
#define FAKE_CUDA_EXTRA_FUNCTIONS(X) \
  X(cuCtxPushCurrent,      4000, OPTIONAL, V2,   1, ((CUcontext, ctx))) \
  X(cuCtxPopCurrent,       4000, OPTIONAL, V2,   1, ((CUcontext *, pctx))) \
  X(cuStreamBeginCapture, 10010, OPTIONAL, V2,   2, ((CUstream, hStream), (int, mode))) \
  X(cuStreamEndCapture,   10000, OPTIONAL, BASE, 2, ((CUstream, hStream), (void **, phGraph)))
/* clang-format on */
#define FAKE_CUDA_ALL_FUNCTIONS(X) NCCLSHIM_CUDA_FUNCTIONS(X) FAKE_CUDA_EXTRA_FUNCTIONS(X)

/* One index per function the fake knows. */
#define FAKE_CUDA_ENUM_(name, ask, policy, abi, n, params) FAKE_FN_##name,
enum { FAKE_CUDA_ALL_FUNCTIONS(FAKE_CUDA_ENUM_) FAKE_FN_COUNT };

/* Each function's behaviour (fake_<name>, in fake_cuda_device.c or fake_cuda_stream.c). */
#define FAKE_CUDA_DECLARE_(name, ask, policy, abi, n, params) \
  ncclshim_cu_result fake_##name NCCLSHIM_PP_PARAMS(n, params);
FAKE_CUDA_ALL_FUNCTIONS(FAKE_CUDA_DECLARE_)

enum { STREAM_FREE, STREAM_LIVE, STREAM_DESTROYED };
enum { KIND_CREATED, KIND_LEGACY, KIND_PER_THREAD };

struct CUctx_st {
  int device;
  int retained;
};

struct CUstream_st {
  int state, kind;
  unsigned generation; /* one more at each creation: events remember theirs */
  CUcontext ctx;
  int answer;       /* FAKE_CUDA_ANY_RESULT: the process-wide one */
  int answer_after; /* records left that complete normally before `answer` applies */
  int delay_ms;
  int records;
  int capture_status, capture_mode, capture_id, capture_on_record;
  unsigned long capture_thread;
};

struct CUevent_st {
  int live; /* 0 once destroyed */
  CUcontext ctx;
  int recorded;
  struct CUstream_st *stream; /* recorded on, of this generation */
  unsigned generation;
  int answer;               /* fixed at the record: 0, 600 (until released), an error */
  long long complete_at_ns; /* 0: no delay */
  int capture_id;           /* not 0: recorded into that capture */
};

FAKE_CUDA_CONTROLS(FAKE_CUDA_PROTOTYPE_)

/* The lock of every object and setting; never held while a call sleeps or blocks. */
extern pthread_mutex_t fake_lock;
extern atomic_int fake_init_pid; /* the process that called cuInit */
/* Whether cuInit was called in this process (a forked child's driver state is not valid). */
int fake_initialized(void);
extern int fake_capture_result, fake_capture_status; /* exported, see fake_cuda.h */
extern fake_cuda_log fake_log;
extern fake_cuda_control fake_control;

/* Under the lock: the calling thread's current context (NULL: none). */
CUcontext fake_current(void);
/* Under the lock: the stream object a handle names for `call`, the legacy and per-thread
 * ones resolved to the calling thread's current context (NULL there: *rc = 201). Aborts
 * for a destroyed or unknown handle. */
struct CUstream_st *fake_stream_of(const char *call, CUstream handle, ncclshim_cu_result *rc);
/* Aborts, naming `call` and what is wrong with `handle`. */
_Noreturn void fake_die(const char *call, const char *what, const void *handle);
long long fake_now_ns(void);
void fake_sleep_ms(int ms);
/* Under the lock: the objects' state back to a fresh process's (fake_cuda_reset). */
void fake_reset_streams(void);
void fake_reset_memory(void);
void fake_reset_contexts(void);

#endif
