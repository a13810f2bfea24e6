/* The fake CUDA driver is as strict as the real one where that was measured (fake_cuda.h):
 * a destroyed stream aborts the process, freed stream handles come back, an event recorded on
 * another context's stream is refused, a destroyed event answers 709, the legacy stream needs
 * a current context, a captured event's query invalidates its capture; and its controls
 * (completion, injection, counts) do what they say. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_cuda.h"
#include "ncclshim/cuda_functions.h"

static fake_cuda_api fake;
static void *driver;

/* The driver's export `name`, as a program binds it. */
#define FN(name) FN_AS(NCCLSHIM_CUDA_PFN(name), #name)
#define FN_V2(name) FN_AS(NCCLSHIM_CUDA_PFN(name), #name "_v2")
#define FN_AS(type, name) ((type)(uintptr_t)dlsym(driver, name))
typedef ncclshim_cu_result (*get_ctx_fn)(CUstream, CUcontext *);
typedef ncclshim_cu_result (*ctx_fn)(CUcontext);
typedef ncclshim_cu_result (*pop_fn)(CUcontext *);
typedef ncclshim_cu_result (*begin_fn)(CUstream, int);
typedef ncclshim_cu_result (*end_fn)(CUstream, void **);

static int setup(void **state) {
  (void)state;
  fake.reset();
  assert_int_equal(fake.use_device(0), 0);
  return 0;
}

static CUstream new_stream(void) {
  CUstream s = NULL;
  assert_int_equal(FN(cuStreamCreate)(&s, 0), 0);
  return s;
}

static CUevent new_event(void) {
  CUevent e = NULL;
  assert_int_equal(FN(cuEventCreate)(&e, NCCLSHIM_CU_EVENT_DISABLE_TIMING), 0);
  return e;
}

/* What a child that runs `call` on a destroyed stream ends with: SIGABRT and the message. */
static void expect_abort(const char *call) {
  int pipe_fds[2];
  assert_int_equal(pipe(pipe_fds), 0);
  CUstream s = new_stream();
  CUevent e = new_event();
  assert_int_equal(FN_V2(cuStreamDestroy)(s), 0);
  pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], 2);
    ncclshim_cu_stream_capture_status status;
    CUcontext ctx;
    if (strcmp(call, "cuStreamIsCapturing") == 0) FN(cuStreamIsCapturing)(s, &status);
    if (strcmp(call, "cuEventRecord") == 0) FN(cuEventRecord)(e, s);
    if (strcmp(call, "cuStreamQuery") == 0) FN(cuStreamQuery)(s);
    if (strcmp(call, "cuStreamSynchronize") == 0) FN(cuStreamSynchronize)(s);
    if (strcmp(call, "cuStreamWaitEvent") == 0) FN(cuStreamWaitEvent)(s, e, 0);
    if (strcmp(call, "cuStreamGetCtx") == 0) FN_AS(get_ctx_fn, "cuStreamGetCtx")(s, &ctx);
    if (strcmp(call, "cuStreamDestroy_v2") == 0) FN_V2(cuStreamDestroy)(s);
    _exit(0);
  }
  close(pipe_fds[1]);
  char text[512] = {0};
  ssize_t got = 0, n;
  while ((n = read(pipe_fds[0], text + got, sizeof(text) - 1 - (size_t)got)) > 0) got += n;
  close(pipe_fds[0]);
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  char expected[128];
  snprintf(expected, sizeof(expected), "fake cuda: call %s with destroyed stream %p", call,
           (void *)s);
  assert_non_null(strstr(text, expected));
}

static void test_destroyed_stream_aborts(void **state) {
  (void)state;
  const char *calls[] = {"cuStreamIsCapturing", "cuEventRecord",     "cuStreamQuery",
                         "cuStreamSynchronize", "cuStreamWaitEvent", "cuStreamGetCtx",
                         "cuStreamDestroy_v2"};
  for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) expect_abort(calls[i]);
}

/* The next stream is the one destroyed last, every time; the stale handle then names it. */
static void test_freed_handles_come_back(void **state) {
  (void)state;
  CUstream keep = new_stream();
  for (int i = 0; i < 200; i++) {
    CUstream a = new_stream();
    assert_int_equal(FN_V2(cuStreamDestroy)(a), 0);
    assert_int_equal(fake.stream_alive(a), 0);
    CUstream b = new_stream();
    assert_ptr_equal(a, b);
    assert_int_equal(fake.stream_records(b), 0); /* a new stream, not the old one */
    assert_int_equal(FN_V2(cuStreamDestroy)(b), 0);
  }
  assert_int_equal(fake.stream_alive(keep), 1);
}

static void test_destroyed_event(void **state) {
  (void)state;
  CUstream s = new_stream();
  int live = fake.live_events();
  CUevent e = new_event();
  assert_int_equal(fake.live_events(), live + 1);
  assert_int_equal(FN_V2(cuEventDestroy)(e), 0);
  assert_int_equal(FN(cuEventQuery)(e), NCCLSHIM_CUDA_ERROR_CONTEXT_IS_DESTROYED);
  assert_int_equal(FN(cuEventRecord)(e, s), NCCLSHIM_CUDA_ERROR_CONTEXT_IS_DESTROYED);
  assert_int_equal(FN_V2(cuEventDestroy)(e), NCCLSHIM_CUDA_ERROR_CONTEXT_IS_DESTROYED);
  assert_int_equal(fake.live_events(), live);
  assert_int_equal(FN(cuEventQuery)(NULL), NCCLSHIM_CUDA_ERROR_INVALID_HANDLE);
}

/* Streams and events belong to the context current at their creation. */
static void test_contexts(void **state) {
  (void)state;
  CUevent e0 = new_event();
  CUstream s1 = fake.new_stream(1), s0 = new_stream();
  assert_non_null(s1);
  assert_int_equal(FN(cuEventRecord)(e0, s1), NCCLSHIM_CUDA_ERROR_INVALID_HANDLE);
  assert_int_equal(FN(cuEventRecord)(e0, s0), 0);
  assert_int_equal(FN(cuEventRecord)(e0, NULL), 0); /* the legacy stream of context 0 */
  CUcontext ctx = NULL, popped = NULL;
  assert_int_equal(FN_AS(get_ctx_fn, "cuStreamGetCtx")(s1, &ctx), 0);
  assert_ptr_equal(ctx, fake.context(1));
  assert_int_equal(FN_AS(get_ctx_fn, "cuStreamGetCtx")(NCCLSHIM_CU_STREAM_PER_THREAD, &ctx), 0);
  assert_ptr_equal(ctx, fake.context(0));
  /* pushed: device 1 current, its legacy stream takes device 1's events */
  assert_int_equal(FN_AS(ctx_fn, "cuCtxPushCurrent_v2")(fake.context(1)), 0);
  CUevent e1 = new_event();
  assert_int_equal(FN(cuEventRecord)(e1, NCCLSHIM_CU_STREAM_LEGACY), 0);
  assert_int_equal(FN(cuEventRecord)(e0, NCCLSHIM_CU_STREAM_LEGACY),
                   NCCLSHIM_CUDA_ERROR_INVALID_HANDLE);
  assert_int_equal(FN_AS(pop_fn, "cuCtxPopCurrent_v2")(&popped), 0);
  assert_ptr_equal(popped, fake.context(1));
  assert_int_equal(FN(cuCtxGetCurrent)(&ctx), 0);
  assert_ptr_equal(ctx, fake.context(0));
  assert_int_equal(FN_AS(pop_fn, "cuCtxPopCurrent_v2")(&popped), 0);
  assert_int_equal(FN_AS(pop_fn, "cuCtxPopCurrent_v2")(&popped),
                   NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(FN(cuEventCreate)(&e1, 0), NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT);
}

/* Another thread, with no context current: the legacy and per-thread streams are refused, a
 * created stream answers. */
static void *no_context_thread(void *arg) {
  CUstream created = arg;
  ncclshim_cu_stream_capture_status status;
  int *results = calloc(3, sizeof(int));
  results[0] = FN(cuStreamIsCapturing)(NULL, &status);
  results[1] = FN(cuStreamIsCapturing)(NCCLSHIM_CU_STREAM_PER_THREAD, &status);
  results[2] = FN(cuStreamIsCapturing)(created, &status);
  return results;
}

static void test_legacy_stream_needs_a_context(void **state) {
  (void)state;
  pthread_t thread;
  void *out = NULL;
  assert_int_equal(pthread_create(&thread, NULL, no_context_thread, new_stream()), 0);
  assert_int_equal(pthread_join(thread, &out), 0);
  int *results = out;
  assert_int_equal(results[0], NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(results[1], NCCLSHIM_CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(results[2], 0);
  free(results);
}

/* An event recorded during a capture is captured: querying it answers 907 and invalidates the
 * capture, which then ends in 901. */
static void test_captured_event_invalidates(void **state) {
  (void)state;
  CUstream s = new_stream();
  CUevent e = new_event();
  void *graph = NULL;
  assert_int_equal(
      FN_AS(begin_fn, "cuStreamBeginCapture_v2")(s, NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      0);
  assert_int_equal(FN(cuEventRecord)(e, s), 0);
  ncclshim_cu_stream_capture_status status = 0;
  assert_int_equal(FN(cuStreamIsCapturing)(s, &status), 0);
  assert_int_equal(status, NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(FN(cuEventQuery)(e), NCCLSHIM_CUDA_ERROR_CAPTURED_EVENT);
  assert_int_equal(FN(cuStreamIsCapturing)(s, &status), 0);
  assert_int_equal(status, NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(FN_AS(end_fn, "cuStreamEndCapture")(s, &graph),
                   NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(graph);
  /* a capture that nothing disturbed ends in a graph */
  assert_int_equal(FN_AS(begin_fn, "cuStreamBeginCapture_v2")(s, 1), 0);
  assert_int_equal(FN_AS(end_fn, "cuStreamEndCapture")(s, &graph), 0);
  assert_non_null(graph);
  /* the legacy stream while a global capture runs */
  assert_int_equal(FN_AS(begin_fn, "cuStreamBeginCapture_v2")(s, 0), 0);
  assert_int_equal(FN(cuStreamIsCapturing)(NULL, &status),
                   NCCLSHIM_CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
}

/* Completion: a held stream until released, a delay, an error; cuStreamQuery follows. */
static void test_completion(void **state) {
  (void)state;
  CUstream held = new_stream(), late = new_stream();
  CUevent a = new_event(), b = new_event(), c = new_event();
  fake.set_stream_answer(held, 600, 0);
  fake.set_stream_answer(late, 600, 1);
  assert_int_equal(FN(cuEventRecord)(a, held), 0);
  assert_int_equal(FN(cuEventRecord)(b, late), 0);
  assert_int_equal(FN(cuEventRecord)(c, late), 0);
  assert_int_equal(FN(cuEventQuery)(a), 600);
  assert_int_equal(FN(cuEventQuery)(b), 0);
  assert_int_equal(FN(cuEventQuery)(c), 600);
  assert_int_equal(FN(cuStreamQuery)(held), 600);
  fake.release_stream(held);
  assert_int_equal(FN(cuEventQuery)(a), 0);
  assert_int_equal(FN(cuStreamQuery)(held), 0);
  assert_int_equal(FN(cuEventQuery)(c), 600);
  fake.set_stream_delay(held, 50);
  assert_int_equal(FN(cuEventRecord)(a, held), 0);
  assert_int_equal(FN(cuEventQuery)(a), 600);
  assert_int_equal(FN(cuEventSynchronize)(a), 0);
  assert_int_equal(FN(cuEventQuery)(a), 0);
  fake.set_event_query(719);
  assert_int_equal(FN(cuEventRecord)(b, NULL), 0);
  assert_int_equal(FN(cuEventQuery)(b), 719);
  fake.complete_all();
  assert_int_equal(FN(cuEventQuery)(c), 0);
}

/* Injected failures and delays, per function and per stream; counts and arguments. */
static void test_injection_and_counts(void **state) {
  (void)state;
  CUstream s = new_stream(), other = new_stream();
  CUevent e = new_event();
  fake.inject("cuEventRecord", 1, s, 700, 2);
  assert_int_equal(FN(cuEventRecord)(e, other), 0);
  assert_int_equal(FN(cuEventRecord)(e, s), 700);
  assert_int_equal(FN(cuEventRecord)(e, s), 700);
  assert_int_equal(FN(cuEventRecord)(e, s), 0);
  fake.inject("cuEventQuery", 0, NULL, 999, FAKE_CUDA_FOREVER);
  assert_int_equal(FN(cuEventQuery)(e), 999);
  assert_int_equal(FN(cuEventQuery)(e), 999);
  fake.inject("cuEventQuery", 0, NULL, 0, 0);
  assert_int_equal(FN(cuEventQuery)(e), 0);
  assert_int_equal(fake.count("cuEventRecord"), 4);
  assert_int_equal(fake.count("cuEventQuery"), 3);
  assert_int_equal(fake.count("cuNoSuchThing"), -1);
  fake_cuda_args args;
  assert_int_equal(fake.last_args("cuEventRecord", &args), 0);
  assert_int_equal(args.nargs, 2);
  assert_true(args.arg[0] == (uintptr_t)e && args.arg[1] == (uintptr_t)s);
  assert_true(args.thread == (unsigned long)pthread_self());
  assert_int_equal(fake.last_args("cuMemAlloc", &args), -1);
  fake.slow("cuEventRecord", 1, s, 30);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(FN(cuEventRecord)(e, s), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 29);
}

int main(void) {
  if (fake_cuda_bind(NULL, &fake) != 0) return 99;
  driver = dlopen(getenv("NCCLSHIM_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (driver == NULL) return 99;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_destroyed_stream_aborts, setup),
      cmocka_unit_test_setup(test_freed_handles_come_back, setup),
      cmocka_unit_test_setup(test_destroyed_event, setup),
      cmocka_unit_test_setup(test_contexts, setup),
      cmocka_unit_test_setup(test_legacy_stream_needs_a_context, setup),
      cmocka_unit_test_setup(test_captured_event_invalidates, setup),
      cmocka_unit_test_setup(test_completion, setup),
      cmocka_unit_test_setup(test_injection_and_counts, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
