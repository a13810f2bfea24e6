/* Symmetric buffers on the fakes: capability gating, alignment, the window preset and
 * checked, registrations finished before use (non-blocking, in a group), graph capture
 * refused, deregister before free, and nothing leaked on any failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm_fixture.h"
#include "ncclshim/symmem.h"

/* The fixture's teardown, and the capture answer back to "not capturing". */
static int teardown(void **state) {
  fake_cuda_capture(0, 0);
  return release_fixture(state);
}

static void test_alloc_and_free(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 5000, NULL, 1000, &mem), NCCLSHIM_OK);
  assert_non_null(mem);
  assert_int_equal(ncclshim_symmem_size(mem), 8192);
  assert_non_null(ncclshim_symmem_ptr(mem));
  assert_int_equal((uintptr_t)ncclshim_symmem_ptr(mem) % 4096, 0);
  assert_non_null(ncclshim_symmem_window(mem));
  assert_true(fake_seq("ncclMemAlloc") < fake_seq("ncclCommWindowRegister"));
  assert_int_equal(fake_allocations(), 1);
  assert_int_equal(fake_windows(), 1);
  assert_int_equal(ncclshim_symmem_complete(mem, 100), NCCLSHIM_OK); /* already complete */
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_allocations(), 0);
  assert_int_equal(fake_windows(), 0);
  assert_true(fake_seq("ncclCommWindowDeregister") < fake_seq("ncclMemFree"));
  assert_int_equal(ncclshim_comm_destroy(comm, 1000), NCCLSHIM_OK);
}

static void test_exact_multiple_kept(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_size(mem), 4096);
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
}

/* An NCCL older than 2.28 is refused before anything is allocated, naming both versions. */
static void test_older_nccl_refused(void **state) {
  (void)state;
  static const char *const variants[] = {"2.27.3", "2.21.5", "missing-optional"};
  for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
    ncclshim_nccl *nccl = fake_open(variants[i]);
    ncclshim_comm *comm = fake_comm(nccl, 1);
    ncclshim_symmem *mem = NULL;
    assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_UNAVAILABLE);
    assert_message("symmetric memory needs NCCL >= 2.28.0");
    char loaded[64];
    snprintf(loaded, sizeof(loaded), "the loaded NCCL is %s",
             i == 0   ? "2.27.3"
             : i == 1 ? "2.21.5"
                      : "2.28.9");
    assert_message(loaded);
    assert_message(fake_current_path());
    assert_null(mem);
    assert_int_equal(fake_count("ncclMemAlloc"), 0);
    assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
    ncclshim_comm_free(comm);
    ncclshim_nccl_close(nccl);
  }
}

/* "Success with no window" is UNAVAILABLE (windows do not register here); the memory goes
 * back and *out stays untouched. */
static void test_null_window(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_null_window(1);
  ncclshim_symmem *const poison = (ncclshim_symmem *)&poison;
  ncclshim_symmem *mem = poison;
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_UNAVAILABLE);
  assert_message(
      "ncclCommWindowRegister returned success but no window: symmetric windows do "
      "not register on this communicator");
  assert_ptr_equal(mem, poison);
  assert_int_equal(fake_allocations(), 0);
  assert_int_equal(fake_count("ncclCommWindowDeregister"), 0);
}

static void test_register_fails(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_symmem *mem = NULL;
  fake_inject("ncclCommWindowRegister", ncclInvalidUsage, 1);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclCommWindowRegister failed: ncclInvalidUsage (5)");
  assert_null(mem);
  assert_int_equal(fake_allocations(), 0);
  fake_inject("ncclMemAlloc", ncclUnhandledCudaError, 1);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_NCCL_ERROR);
  assert_message("ncclMemAlloc failed: ncclUnhandledCudaError (1)");
  assert_int_equal(fake_count("ncclCommWindowRegister"), 1);
  assert_null(mem);
}

/* Non-blocking: the window exists only once the communicator finishes; alloc waits for it. */
static void test_nonblocking_registration(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  fake_async(3, ncclSuccess);
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 100, NULL, 1000, &mem), NCCLSHIM_OK);
  assert_non_null(ncclshim_symmem_window(mem));
  fake_async(2, ncclSuccess);
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_allocations(), 0);
  assert_int_equal(fake_windows(), 0);
}

/* A registration that never finishes: TIMEOUT, the buffer left to NCCL while it may still
 * write the window and use the memory, and given back once the communicator's abort has
 * returned and the wrapper is freed (valgrind and LeakSanitizer see the rest). The trial of
 * ncclshim_comm_has(SYMMETRIC_WINDOWS) the same way. */
static void test_registration_times_out(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  for (int trial = 0; trial <= 1; trial++) {
    fake_async(0, ncclSuccess);
    ncclshim_comm *comm = fake_comm(nccl, 0);
    assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
    fake_async(-1, ncclSuccess);
    ncclshim_symmem *mem = NULL;
    ncclshim_answer answer;
    int64_t start = now_ms();
    if (trial)
      assert_int_equal(
          ncclshim_comm_has(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, 20, &answer, NULL, 0),
          NCCLSHIM_TIMEOUT);
    else
      assert_int_equal(ncclshim_symmem_alloc(comm, 100, NULL, 200, &mem), NCCLSHIM_TIMEOUT);
    assert_true(now_ms() - start <= 200 + test_slack_ms(20));
    assert_null(mem);
    assert_int_equal(fake_allocations(), 1); /* NCCL may still use it */
    assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
    ncclshim_comm_free(comm);
    assert_int_equal(fake_allocations(), 0);
  }
}

/* Inside a group the window is filled at group end; complete() checks it after that. */
static void test_in_group(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  for (int blocking = 1; blocking >= 0; blocking--) {
    ncclshim_comm *comm = fake_comm(nccl, blocking);
    assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
    ncclshim_symmem *a = NULL, *b = NULL;
    assert_int_equal(t->ncclGroupStart(), ncclSuccess);
    assert_int_equal(ncclshim_symmem_alloc_in_group(comm, 4096, NULL, &a), NCCLSHIM_OK);
    assert_int_equal(ncclshim_symmem_alloc_in_group(comm, 5000, NULL, &b), NCCLSHIM_OK);
    /* the registration as NCCL got it: the rounded size, the symmetric flag */
    const fake_nccl_call *call = fake_last_call(fake_current_path());
    assert_string_equal(call->function, "ncclCommWindowRegister");
    size_t size;
    int flags;
    memcpy(&size, call->bytes[2], sizeof(size));
    memcpy(&flags, call->bytes[4], sizeof(flags));
    assert_int_equal(size, 8192);
    assert_int_equal(flags, NCCL_WIN_COLL_SYMMETRIC);
    assert_non_null(ncclshim_symmem_ptr(a));
    assert_null(ncclshim_symmem_window(a));
    assert_int_equal(fake_windows(), 0);
    fake_async(2, ncclSuccess);
    assert_int_equal(ncclshim_comm_group_end(nccl, &comm, 1, 1000), NCCLSHIM_OK);
    assert_int_equal(ncclshim_symmem_complete(a, 1000), NCCLSHIM_OK);
    assert_int_equal(ncclshim_symmem_complete(b, 1000), NCCLSHIM_OK);
    assert_non_null(ncclshim_symmem_window(a));
    assert_non_null(ncclshim_symmem_window(b));
    assert_ptr_not_equal(ncclshim_symmem_window(a), ncclshim_symmem_window(b));
    assert_int_equal(ncclshim_symmem_free(a, 1000), NCCLSHIM_OK);
    assert_int_equal(ncclshim_symmem_free(b, 1000), NCCLSHIM_OK);
    assert_int_equal(fake_windows(), 0);
    assert_int_equal(fake_allocations(), 0);
    ncclshim_comm_free(comm);
  }
}

/* complete() before the group ended is a misuse (INVALID_ARGUMENT), and says where the window
 * comes from; after it, a NULL window says windows do not register (UNAVAILABLE), as outside
 * a group. */
static void test_in_group_completed_too_early(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  ncclshim_comm *comm = fake_comm(nccl, 1);
  ncclshim_symmem *a = NULL;
  assert_int_equal(t->ncclGroupStart(), ncclSuccess);
  assert_int_equal(ncclshim_symmem_alloc_in_group(comm, 4096, NULL, &a), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_complete(a, 100), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("inside a group the window only exists after ncclGroupEnd");
  assert_message("call it after ncclshim_comm_group_end");
  assert_int_equal(ncclshim_comm_group_end(nccl, &comm, 1, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_complete(a, 100), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_free(a, 1000), NCCLSHIM_OK);
  fake_null_window(1);
  assert_int_equal(t->ncclGroupStart(), ncclSuccess);
  assert_int_equal(ncclshim_symmem_alloc_in_group(comm, 4096, NULL, &a), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_group_end(nccl, &comm, 1, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_complete(a, 100), NCCLSHIM_UNAVAILABLE);
  assert_message("symmetric windows do not register on this communicator");
  assert_int_equal(ncclshim_symmem_free(a, 1000), NCCLSHIM_OK);
  fake_null_window(0);
  ncclshim_comm_free(comm);
}

/* A stream capturing a CUDA graph: refused before any NCCL call. A driver that cannot answer
 * skips the check; an unexpected answer is a CUDA_ERROR. */
static void test_graph_capture(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_symmem *mem = NULL;
  cudaStream_t stream = (cudaStream_t)cuda_fake()->new_stream(0);
  char expected[96];
  fake_cuda_capture(0, NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, stream, 1000, &mem),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_message("is capturing a CUDA graph");
  assert_message("allocate symmetric buffers before capturing");
  assert_int_equal(ncclshim_symmem_alloc_in_group(comm, 4096, stream, &mem),
                   NCCLSHIM_INVALID_ARGUMENT);
  fake_cuda_capture(0, NCCLSHIM_CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, stream, 1000, &mem),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_message("(an invalidated capture)");
  fake_cuda_capture(906, 0); /* CUDA_ERROR_STREAM_CAPTURE_IMPLICIT */
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(fake_count("ncclMemAlloc"), 0);
  assert_null(mem);
  fake_cuda_capture(400, 0); /* CUDA_ERROR_INVALID_HANDLE */
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, stream, 1000, &mem), NCCLSHIM_CUDA_ERROR);
  snprintf(expected, sizeof(expected),
           "cuStreamIsCapturing(%p) failed: CUDA_ERROR_INVALID_HANDLE (400)", (void *)stream);
  assert_message(expected);
  static const int cannot_tell[] = {3, 4, 201, 801};
  for (size_t i = 0; i < sizeof(cannot_tell) / sizeof(cannot_tell[0]); i++) {
    fake_cuda_capture(cannot_tell[i], 0);
    assert_int_equal(ncclshim_symmem_alloc(comm, 4096, stream, 1000, &mem), NCCLSHIM_OK);
    assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
    mem = NULL;
  }
}

static void test_argument_checks(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(NULL, 4096, NULL, 1000, &mem), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_alloc(comm, 0, NULL, 1000, &mem), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_alloc(comm, SIZE_MAX - 100, NULL, 1000, &mem),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, -1, &mem), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_complete(NULL, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_symmem_free(NULL, 10), NCCLSHIM_OK);
  assert_null(ncclshim_symmem_ptr(NULL));
  assert_int_equal(ncclshim_symmem_size(NULL), 0);
  assert_null(ncclshim_symmem_window(NULL));
  assert_int_equal(fake_count("ncclMemAlloc"), 0);
  ncclshim_comm *initializing = fake_comm(nccl, 0);
  assert_int_equal(ncclshim_symmem_alloc(initializing, 4096, NULL, 1000, &mem),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_message("the communicator is initializing; registration needs a ready one");
  assert_null(mem);
  ncclshim_comm_free(initializing);
}

/* A buffer whose free fails at NCCL's `step` (injected once): NCCL_ERROR naming it. */
static ncclshim_symmem *free_fails(ncclshim_comm *comm, const char *step, ncclResult_t error,
                                   const char *message) {
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_OK);
  fake_inject(step, error, 1);
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_NCCL_ERROR);
  assert_message(message);
  return mem;
}

/* After the communicator is aborted there is nothing to deregister: only the memory goes. */
static void test_free_after_abort(void **state) {
  comm_fixture *f = *state;
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(f->comm, 4096, NULL, 1000, &mem), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_abort(f->comm, 1000), NCCLSHIM_OK);
  ncclshim_comm_free(f->comm); /* the buffer keeps what it needs */
  f->comm = NULL;
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclCommWindowDeregister"), 0);
  assert_int_equal(fake_allocations(), 0);
}

/* A failed communicator still holding a window: free refuses (NCCL may use the memory) until
 * the communicator is aborted. A failed deregistration keeps everything for a retry. */
static void test_free_refusals(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_symmem *mem = free_fails(comm, "ncclCommWindowDeregister", ncclInternalError,
                                    "ncclCommWindowDeregister failed: ncclInternalError (3)");
  assert_int_equal(fake_allocations(), 1);
  fake_async(0, ncclRemoteError);
  assert_int_equal(ncclshim_comm_wait(comm, 100), NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_INVALID_ARGUMENT);
  assert_message("abort the communicator (ncclshim_comm_abort), then free the buffer");
  assert_int_equal(fake_allocations(), 1);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_symmem_free(mem, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_allocations(), 0);
}

static void test_memfree_fails(void **state) {
  free_fails(fixture_comm(state), "ncclMemFree", ncclUnhandledCudaError,
             "ncclMemFree failed: ncclUnhandledCudaError (1)");
  assert_int_equal(fake_windows(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_alloc_and_free, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_exact_multiple_kept, blocking_2289, teardown),
      cmocka_unit_test(test_older_nccl_refused),
      cmocka_unit_test_setup_teardown(test_null_window, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_register_fails, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_nonblocking_registration, nonblocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_registration_times_out, on_2289, teardown),
      cmocka_unit_test_setup_teardown(test_in_group, on_2289, teardown),
      cmocka_unit_test_setup_teardown(test_in_group_completed_too_early, on_2289, teardown),
      cmocka_unit_test_setup_teardown(test_graph_capture, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_argument_checks, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_free_after_abort, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_free_refusals, blocking_2289, teardown),
      cmocka_unit_test_setup_teardown(test_memfree_fails, blocking_2289, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
