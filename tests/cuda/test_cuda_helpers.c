/* The helpers on fake drivers: explicit init (no device, stub, fork), streams and events with
 * "not ready" kept apart from errors, memory through the table, and the device description
 * with its tri-state facts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "support.h"
#include "cuda_fakes.h"

static ncclshim_cuda *cuda; /* the 13.0 fake, initialised */
static char *path;

static int setup(void **state) {
  (void)state;
  if (cuda_open_fake("13.0", &cuda, &path) != NCCLSHIM_OK) return -1;
  return ncclshim_cuda_init(cuda) == NCCLSHIM_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  ncclshim_cuda_close(cuda);
  return 0;
}

#define assert_contains(text, needle)                                                \
  do {                                                                               \
    if (strstr(text, needle) == NULL) fail_msg("\"%s\" lacks \"%s\"", text, needle); \
  } while (0)

static void test_init_calls_cuinit_once(void **state) {
  (void)state;
  assert_int_equal(ncclshim_cuda_init(cuda), NCCLSHIM_OK);
  assert_int_equal(cuda_fake_calls(path, "cuInit"), 1);
  assert_int_equal(ncclshim_cuda_init(NULL), NCCLSHIM_INVALID_ARGUMENT);
}

static void test_no_device(void **state) {
  (void)state;
  ncclshim_cuda *none = cuda_fake_opened("no-device", NCCLSHIM_OK, NULL);
  assert_int_equal(ncclshim_cuda_init(none), NCCLSHIM_NO_DEVICE);
  assert_contains(ncclshim_last_error(), "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
  ncclshim_cuda_close(none);
}

/* A library that passes the version check but whose cuInit says "stub". */
static void test_init_reports_stub(void **state) {
  (void)state;
  char *stub_path;
  ncclshim_cuda *stub = cuda_fake_opened("init-stub", NCCLSHIM_OK, &stub_path);
  assert_int_equal(ncclshim_cuda_is_stub(stub), 0);
  assert_int_equal(ncclshim_cuda_init(stub), NCCLSHIM_DRIVER_UNAVAILABLE);
  expect_stub(stub, ncclshim_last_error(), stub_path, "stub library");
  ncclshim_cuda_close(stub);
}

static void test_helpers_before_init(void **state) {
  (void)state;
  ncclshim_cuda *fresh = cuda_fake_opened("12.2", NCCLSHIM_OK, NULL);
  int count = -1;
  assert_int_equal(ncclshim_cuda_device_count(fresh, &count), NCCLSHIM_CUDA_ERROR);
  assert_int_equal(count, -1);
  assert_contains(ncclshim_last_error(),
                  "ncclshim_cuda_device_count: cuDeviceGetCount failed: "
                  "CUDA_ERROR_NOT_INITIALIZED (3)");
  assert_contains(ncclshim_last_error(), "ncclshim_cuda_init has not been called");
  ncclshim_cuda_close(fresh);
}

static void test_without_driver(void **state) {
  (void)state;
  ncclshim_cuda *none = cuda_opened("/nonexistent/libcuda.so.1", NCCLSHIM_NOT_FOUND);
  CUstream stream = NULL;
  int count;
  assert_int_equal(ncclshim_cuda_init(none), NCCLSHIM_DRIVER_UNAVAILABLE);
  assert_contains(ncclshim_last_error(), "ncclshim_cuda_init: no usable CUDA driver");
  assert_int_equal(ncclshim_cuda_stream_create(none, 0, &stream), NCCLSHIM_DRIVER_UNAVAILABLE);
  assert_int_equal(ncclshim_cuda_device_count(none, &count), NCCLSHIM_DRIVER_UNAVAILABLE);
  assert_int_equal(ncclshim_cuda_stream_create(NULL, 0, &stream), NCCLSHIM_INVALID_ARGUMENT);
  assert_null(stream);
  ncclshim_cuda_close(none);
}

static void test_stream_needs_a_context(void **state) {
  (void)state;
  assert_int_equal(ncclshim_cuda_functions(cuda)->cuCtxSetCurrent(NULL), 0);
  CUstream stream = (CUstream)&stream; /* a sentinel: must stay untouched */
  assert_int_equal(ncclshim_cuda_stream_create(cuda, 0, &stream), NCCLSHIM_CUDA_ERROR);
  assert_ptr_equal(stream, (CUstream)&stream);
  /* Named, numbered, and in the driver's own words. */
  assert_contains(ncclshim_last_error(),
                  "ncclshim_cuda_stream_create: cuStreamCreate failed: "
                  "CUDA_ERROR_INVALID_CONTEXT (201): fake driver: invalid device context");
}

static void test_streams_and_events(void **state) {
  (void)state;
  CUcontext ctx = NULL;
  assert_int_equal(ncclshim_cuda_device_activate(cuda, 1, &ctx), NCCLSHIM_OK);
  assert_non_null(ctx);
  CUstream stream = NULL;
  CUevent event = NULL;
  assert_int_equal(ncclshim_cuda_stream_create(cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &stream),
                   NCCLSHIM_OK);
  assert_int_equal(ncclshim_cuda_event_create(cuda, NCCLSHIM_CU_EVENT_DISABLE_TIMING, &event),
                   NCCLSHIM_OK);
  assert_non_null(stream);
  assert_non_null(event);
  assert_int_equal(ncclshim_cuda_event_record(cuda, event, stream), NCCLSHIM_OK);
  assert_int_equal(ncclshim_cuda_stream_wait_event(cuda, stream, event), NCCLSHIM_OK);

  /* Pending work is "not ready", reported as OK with ready = 0, until it finishes. */
  cuda_fake_control(path)->not_ready = 2;
  int ready = -1;
  assert_int_equal(ncclshim_cuda_stream_query(cuda, stream, &ready), NCCLSHIM_OK);
  assert_int_equal(ready, 0);
  assert_int_equal(ncclshim_cuda_stream_query(cuda, stream, &ready), NCCLSHIM_OK);
  assert_int_equal(ready, 0);
  assert_int_equal(ncclshim_cuda_stream_query(cuda, stream, &ready), NCCLSHIM_OK);
  assert_int_equal(ready, 1);
  cuda_fake_control(path)->not_ready = 5;
  assert_int_equal(ncclshim_cuda_stream_synchronize(cuda, stream), NCCLSHIM_OK);
  assert_int_equal(ncclshim_cuda_stream_query(cuda, stream, &ready), NCCLSHIM_OK);
  assert_int_equal(ready, 1);

  assert_int_equal(ncclshim_cuda_event_destroy(cuda, event), NCCLSHIM_OK);
  assert_int_equal(ncclshim_cuda_stream_destroy(cuda, stream), NCCLSHIM_OK);
  assert_int_equal(cuda_fake_calls(path, "cuStreamDestroy_v2"), 1);
  assert_int_equal(cuda_fake_calls(path, "cuEventDestroy_v2"), 1);
  assert_int_equal(ncclshim_cuda_device_release(cuda, 1), NCCLSHIM_OK);
  /* One release too many is the driver's error, not hidden. */
  assert_int_equal(ncclshim_cuda_device_release(cuda, 1), NCCLSHIM_CUDA_ERROR);
  assert_contains(ncclshim_last_error(), "cuDevicePrimaryCtxRelease failed");
}

/* A failed query is an error, never "not ready"; ready is left alone. */
static void test_query_failure_is_not_not_ready(void **state) {
  (void)state;
  assert_int_equal(ncclshim_cuda_functions(cuda)->cuCtxSetCurrent(NULL), 0);
  int ready = -1;
  assert_int_equal(ncclshim_cuda_stream_query(cuda, NULL, &ready), NCCLSHIM_CUDA_ERROR);
  assert_int_equal(ready, -1);
  assert_contains(ncclshim_last_error(), "cuStreamQuery failed: CUDA_ERROR_INVALID_CONTEXT");
  assert_int_equal(ncclshim_cuda_stream_query(cuda, NULL, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_cuda_stream_destroy(cuda, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_cuda_event_record(cuda, NULL, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_cuda_device_activate(cuda, -1, NULL), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_cuda_device_activate(cuda, 7, NULL), NCCLSHIM_CUDA_ERROR);
  assert_contains(ncclshim_last_error(), "cuDeviceGet failed");
}

/* The _v2 memory ABIs end to end (64-bit addresses, size_t sizes). */
static void test_memory_through_table(void **state) {
  (void)state;
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(cuda);
  assert_int_equal(ncclshim_cuda_device_activate(cuda, 0, NULL), NCCLSHIM_OK);
  CUdeviceptr buffer = 0;
  char in[64], out[64];
  memset(in, 'x', sizeof(in));
  assert_int_equal(t->cuMemAlloc(&buffer, sizeof(in)), 0);
  assert_int_equal(t->cuMemcpyHtoD(buffer, in, sizeof(in)), 0);
  assert_int_equal(t->cuMemsetD8(buffer, 'y', 8), 0);
  assert_int_equal(t->cuMemcpyDtoH(out, buffer, sizeof(out)), 0);
  assert_memory_equal(out + 8, in + 8, sizeof(in) - 8);
  assert_int_equal(out[0], 'y');
  int ordinal = -1;
  assert_int_equal(
      t->cuPointerGetAttribute(&ordinal, NCCLSHIM_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, buffer), 0);
  assert_int_equal(ordinal, 0);
  assert_int_equal(t->cuMemFree(buffer), 0);
  assert_int_equal(ncclshim_cuda_device_release(cuda, 0), NCCLSHIM_OK);
}

static void test_device_count(void **state) {
  (void)state;
  int count = 0;
  assert_int_equal(ncclshim_cuda_device_count(cuda, &count), NCCLSHIM_OK);
  assert_int_equal(count, 2);
}

static void test_describe_device(void **state) {
  (void)state;
  ncclshim_cuda_device_info info = NCCLSHIM_CUDA_DEVICE_INFO_INIT;
  assert_int_equal(ncclshim_cuda_describe_device(cuda, 0, &info), NCCLSHIM_OK);
  assert_int_equal(info.size, sizeof(info));
  assert_string_equal(info.name, "Fake GPU 0");
  assert_int_equal(info.cc_major, 9);
  assert_int_equal(info.cc_minor, 0);
  assert_int_equal(info.multiprocessors, 132);
  assert_int_equal(info.total_memory, (size_t)80 << 30);
  assert_int_equal(info.pci_domain, 0);
  assert_int_equal(info.pci_bus, 0x1b);
  assert_int_equal(info.pci_device, 0);
  assert_int_equal(info.uuid_query.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.uuid.bytes[15], 15);
  assert_int_equal(info.vmm.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.posix_fd_handle.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.fabric_handle.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.multicast.support, NCCLSHIM_CUDA_UNSUPPORTED);
  assert_int_equal(info.multicast.result, 0);
  assert_int_equal(info.gpu_direct_rdma.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.peer_count, 2);
  assert_int_equal(info.peer_access[0].support, NCCLSHIM_CUDA_UNSUPPORTED);
  assert_int_equal(info.peer_access[1].support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.supported, NCCLSHIM_CUDA_FACT_VMM | NCCLSHIM_CUDA_FACT_POSIX_FD_HANDLE |
                                       NCCLSHIM_CUDA_FACT_FABRIC_HANDLE |
                                       NCCLSHIM_CUDA_FACT_GPU_DIRECT_RDMA);
  assert_int_equal(info.failed, 0);

  assert_int_equal(ncclshim_cuda_describe_device(cuda, 1, &info), NCCLSHIM_OK);
  assert_string_equal(info.name, "Fake GPU 1");
  assert_int_equal(info.multicast.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_int_equal(info.fabric_handle.support, NCCLSHIM_CUDA_UNSUPPORTED);
}

/* A query that fails is kept as failed (with its CUresult), never read as "unsupported". */
static void test_describe_failed_query(void **state) {
  (void)state;
  fake_cuda_control *control = cuda_fake_control(path);
  control->failing_attribute = NCCLSHIM_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED;
  ncclshim_cuda_device_info info = NCCLSHIM_CUDA_DEVICE_INFO_INIT;
  ncclshim_status status = ncclshim_cuda_describe_device(cuda, 0, &info);
  control->failing_attribute = 0;
  assert_int_equal(status, NCCLSHIM_OK);
  assert_int_equal(info.fabric_handle.support, NCCLSHIM_CUDA_QUERY_FAILED);
  assert_int_equal(info.fabric_handle.result, 999);
  assert_int_equal(info.failed, NCCLSHIM_CUDA_FACT_FABRIC_HANDLE);
  assert_int_equal(info.supported & NCCLSHIM_CUDA_FACT_FABRIC_HANDLE, 0);
  assert_int_equal(info.vmm.support, NCCLSHIM_CUDA_SUPPORTED);
  assert_string_equal(ncclshim_cuda_support_name(info.fabric_handle.support), "query-failed");
}

/* An identity fact that cannot be read fails the call, and the caller's struct is untouched. */
static void test_describe_identity_failure(void **state) {
  (void)state;
  fake_cuda_control *control = cuda_fake_control(path);
  control->failing_attribute = NCCLSHIM_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
  ncclshim_cuda_device_info info = NCCLSHIM_CUDA_DEVICE_INFO_INIT;
  info.cc_major = -7;
  ncclshim_status status = ncclshim_cuda_describe_device(cuda, 0, &info);
  control->failing_attribute = 0;
  assert_int_equal(status, NCCLSHIM_CUDA_ERROR);
  assert_int_equal(info.cc_major, -7);
  assert_int_equal(info.name[0], '\0');
  assert_contains(ncclshim_last_error(), "attribute 75");
  assert_contains(ncclshim_last_error(), "CUDA_ERROR_UNKNOWN (999)");
  assert_int_equal(ncclshim_cuda_describe_device(cuda, 9, &info), NCCLSHIM_CUDA_ERROR);
  assert_contains(ncclshim_last_error(), "CUDA_ERROR_INVALID_DEVICE (101)");
  assert_int_equal(ncclshim_cuda_describe_device(cuda, -1, &info), NCCLSHIM_INVALID_ARGUMENT);
}

/* An older driver: no cuDeviceGetUuid (< 11.4) is a failed UUID query; attributes it does not
 * know yet (multicast, fabric) are unsupported, with its answer (1) kept. */
static void test_describe_on_older_driver(void **state) {
  (void)state;
  ncclshim_cuda *old = cuda_fake_opened("11.3", NCCLSHIM_OK, NULL);
  assert_int_equal(ncclshim_cuda_init(old), NCCLSHIM_OK);
  ncclshim_cuda_device_info info = NCCLSHIM_CUDA_DEVICE_INFO_INIT;
  assert_int_equal(ncclshim_cuda_describe_device(old, 0, &info), NCCLSHIM_OK);
  assert_int_equal(info.uuid_query.support, NCCLSHIM_CUDA_QUERY_FAILED);
  assert_int_equal(info.uuid_query.result, NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED);
  assert_int_equal(info.multicast.support, NCCLSHIM_CUDA_UNSUPPORTED);
  assert_int_equal(info.multicast.result, NCCLSHIM_CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(info.fabric_handle.support, NCCLSHIM_CUDA_UNSUPPORTED);
  assert_int_equal(info.gpu_direct_rdma.support, NCCLSHIM_CUDA_SUPPORTED);
  ncclshim_cuda_close(old);
}

/* A caller built against a smaller struct gets only its own part written. */
static void test_describe_respects_size(void **state) {
  (void)state;
  union {
    ncclshim_cuda_device_info info;
    unsigned char bytes[sizeof(ncclshim_cuda_device_info)];
  } buffer;
  memset(&buffer, 0xab, sizeof(buffer));
  size_t part = offsetof(ncclshim_cuda_device_info, uuid_query);
  buffer.info.size = part;
  assert_int_equal(ncclshim_cuda_describe_device(cuda, 0, &buffer.info), NCCLSHIM_OK);
  assert_int_equal(buffer.info.size, part);
  assert_string_equal(buffer.info.name, "Fake GPU 0");
  for (size_t i = part; i < sizeof(buffer); i++) assert_int_equal(buffer.bytes[i], 0xab);
  buffer.info.size = part - 1;
  assert_int_equal(ncclshim_cuda_describe_device(cuda, 0, &buffer.info), NCCLSHIM_INVALID_ARGUMENT);
  assert_contains(ncclshim_last_error(), "info->size");
  assert_int_equal(ncclshim_cuda_describe_device(cuda, 0, NULL), NCCLSHIM_INVALID_ARGUMENT);
}

/* Run `check` in a forked child; it returns 0 when the child saw what it should. */
static void in_child(int (*check)(void)) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(check());
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) != 0) fail_msg("the child's check %d failed", WEXITSTATUS(status));
}

static int child_after_init(void) {
  CUstream stream = NULL;
  if (ncclshim_cuda_stream_create(cuda, 0, &stream) != NCCLSHIM_FORKED) return 1;
  if (strstr(ncclshim_last_error(), "forked") == NULL) return 2;
  if (strstr(ncclshim_last_error(), "only after fork()") == NULL) return 3;
  if (ncclshim_cuda_init(cuda) != NCCLSHIM_FORKED) return 4;
  int count;
  if (ncclshim_cuda_device_count(cuda, &count) != NCCLSHIM_FORKED) return 5;
  return stream == NULL ? 0 : 6;
}

static void test_fork_after_init(void **state) {
  (void)state;
  in_child(child_after_init);
  /* The parent is unaffected. */
  int count = 0;
  assert_int_equal(ncclshim_cuda_device_count(cuda, &count), NCCLSHIM_OK);
}

static ncclshim_cuda *loaded_only; /* loaded in the parent, never initialised there */

static int child_before_init(void) {
  if (ncclshim_cuda_init(loaded_only) != NCCLSHIM_OK) return 1;
  int count = 0;
  if (ncclshim_cuda_device_count(loaded_only, &count) != NCCLSHIM_OK || count != 2) return 2;
  return 0;
}

/* Loading alone is fork-safe: the child initialises and works. Skipped under a cross build's
 * exe_wrapper: the child's cuInit starts the driver's thread, and qemu-user (7.2) aborts when
 * a forked child of a threaded process starts a thread (qemu_plugin_vcpu_init_hook: assertion
 * failed); the parent has the driver thread of the handle initialised in setup. */
static void test_fork_before_init(void **state) {
  (void)state;
  const char *wrapper[8];
  if (test_wrapper_words(wrapper, 8) > 0) {
    print_message(
        "skipped under the exe wrapper: qemu-user aborts a forked child that starts "
        "a thread\n");
    skip();
  }
  loaded_only = cuda_fake_opened("12.2", NCCLSHIM_OK, NULL);
  in_child(child_before_init);
  ncclshim_cuda_close(loaded_only);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_calls_cuinit_once),
      cmocka_unit_test(test_no_device),
      cmocka_unit_test(test_init_reports_stub),
      cmocka_unit_test(test_helpers_before_init),
      cmocka_unit_test(test_without_driver),
      cmocka_unit_test(test_stream_needs_a_context),
      cmocka_unit_test(test_streams_and_events),
      cmocka_unit_test(test_query_failure_is_not_not_ready),
      cmocka_unit_test(test_memory_through_table),
      cmocka_unit_test(test_device_count),
      cmocka_unit_test(test_describe_device),
      cmocka_unit_test(test_describe_failed_query),
      cmocka_unit_test(test_describe_identity_failure),
      cmocka_unit_test(test_describe_on_older_driver),
      cmocka_unit_test(test_describe_respects_size),
      cmocka_unit_test(test_fork_after_init),
      cmocka_unit_test(test_fork_before_init),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
