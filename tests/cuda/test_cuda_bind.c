/* Binding the table on each fake driver: the bootstrap used, the ABI version requested for
 * every function (never above the driver's), the ABI that actually gets called, stub and
 * foreign libraries, explicit paths that fail loudly, and the never-NULL table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cuda_fakes.h"

/* What each function must be asked for and which export must then answer, written from
 * docs/cuda-driver-abi.md §3 rather than from the list, so the two check each other. */
static const struct {
  const char *name;
  int ask;
  const char *export;
} expected[] = {
    {"cuInit", 2000, "cuInit"},
    {"cuDriverGetVersion", 2020, "cuDriverGetVersion"},
    {"cuDeviceGetCount", 2000, "cuDeviceGetCount"},
    {"cuDeviceGet", 2000, "cuDeviceGet"},
    {"cuDeviceGetName", 2000, "cuDeviceGetName"},
    {"cuDeviceGetAttribute", 2000, "cuDeviceGetAttribute"},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2"},
    {"cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2"},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain"},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"},
    {"cuCtxSetCurrent", 4000, "cuCtxSetCurrent"},
    {"cuCtxGetCurrent", 4000, "cuCtxGetCurrent"},
    {"cuCtxGetDevice", 2000, "cuCtxGetDevice"},     /* not the 13.0 _v2 (takes a context) */
    {"cuCtxSynchronize", 2000, "cuCtxSynchronize"}, /* likewise */
    {"cuStreamCreate", 2000, "cuStreamCreate"},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2"},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize"},
    {"cuStreamQuery", 2000, "cuStreamQuery"},
    {"cuStreamWaitEvent", 3020, "cuStreamWaitEvent"},
    {"cuStreamIsCapturing", 10000, "cuStreamIsCapturing"},
    {"cuEventCreate", 2000, "cuEventCreate"},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2"},
    {"cuEventRecord", 2000, "cuEventRecord"},
    {"cuEventQuery", 2000, "cuEventQuery"},
    {"cuEventSynchronize", 2000, "cuEventSynchronize"},
    {"cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"}, /* 2000 on drivers < 12.8 */
    {"cuMemAlloc", 3020, "cuMemAlloc_v2"},
    {"cuMemFree", 3020, "cuMemFree_v2"},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2"},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2"},
    {"cuMemsetD8", 3020, "cuMemsetD8_v2"},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2"},
    {"cuPointerGetAttribute", 4000, "cuPointerGetAttribute"},
    {"cuDeviceCanAccessPeer", 4000, "cuDeviceCanAccessPeer"},
    {"cuGetErrorName", 6000, "cuGetErrorName"},
    {"cuGetErrorString", 6000, "cuGetErrorString"},
    {"cuThreadExchangeStreamCaptureMode", 10010, "cuThreadExchangeStreamCaptureMode"},
    {"cuStreamGetCtx", 9020, "cuStreamGetCtx"},
    {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2"},
    {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2"},
};
enum { EXPECTED = sizeof(expected) / sizeof(expected[0]) };

/* The ask (and export) on a driver of this version. */
static int ask_on(size_t i, int driver, const char **export) {
  if (strcmp(expected[i].name, "cuEventElapsedTime") == 0 && driver < 12080) {
    *export = "cuEventElapsedTime";
    return 2000;
  }
  *export = expected[i].export;
  return expected[i].ask;
}

static void test_list_matches_the_abi_facts(void **state) {
  (void)state;
  assert_int_equal(NCCLSHIM_CUDA_FUNCTION_COUNT, EXPECTED);
  for (int i = 0; i < NCCLSHIM_CUDA_FUNCTION_COUNT; i++) {
    assert_string_equal(ncclshim_cuda_function_name(i), expected[i].name);
    assert_int_equal(ncclshim_cuda_function_version(i), expected[i].ask);
  }
  assert_int_equal(ncclshim_cuda_function_required(NCCLSHIM_CUDA_FN_cuInit), 1);
  assert_int_equal(ncclshim_cuda_function_required(NCCLSHIM_CUDA_FN_cuDeviceGetUuid), 0);
  assert_string_equal(ncclshim_cuda_function_name(NCCLSHIM_CUDA_FUNCTION_COUNT),
                      "(unknown function)");
  assert_int_equal(ncclshim_cuda_function_version(-1), 0);
}

/* Every cuGetProcAddress request: exactly one per function the driver is new enough for, at
 * the expected version, flags 0, none above the driver's version. */
static void check_requests(const char *path, int driver) {
  const fake_cuda_log *log = cuda_fake_log(path);
  int wanted = 0;
  for (size_t i = 0; i < EXPECTED; i++) {
    const char *export;
    int ask = ask_on(i, driver, &export);
    int seen = 0;
    for (int r = 0; r < log->request_count; r++) {
      if (strcmp(log->requests[r].symbol, expected[i].name) != 0) continue;
      seen++;
      if (log->requests[r].version != ask)
        fail_msg("%s was asked at %d, expected %d", expected[i].name, log->requests[r].version,
                 ask);
      assert_int_equal(log->requests[r].result, 0);
    }
    if (ask <= driver) {
      wanted++;
      if (seen != 1) fail_msg("%s was asked %d times", expected[i].name, seen);
    } else if (seen != 0) {
      fail_msg("%s was asked of a %d driver, which is too old for it", expected[i].name, driver);
    }
  }
  assert_int_equal(log->request_count, wanted);
  for (int r = 0; r < log->request_count; r++) {
    assert_true(log->requests[r].version <= driver);
    assert_int_equal(log->requests[r].flags, 0);
  }
}

/* Zero arguments of each parameter's type. */
#define ZERO_(type, name) \
  (type) { 0 }
#define ZERO_ARGS_(n, params) \
  (NCCLSHIM_PP_APPLY(NCCLSHIM_PP_LIST_##n, (ZERO_, NCCLSHIM_PP_STRIP params)))

/* Call every entry but cuInit on a fake nobody initialised (so each answers before touching
 * its arguments) and check that the expected export answered each call: the ABI bound. */
static void check_exports_called(const ncclshim_cuda *cuda, const char *path, int driver) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(cuda);
  fake_cuda_log *log = cuda_fake_log(path);
  log->call_count = 0;
#define CALL_(name, ask, policy, kind, n, params) \
  if (NCCLSHIM_CUDA_FN_##name != NCCLSHIM_CUDA_FN_cuInit) (void)t->name ZERO_ARGS_(n, params);
  NCCLSHIM_CUDA_FUNCTIONS(CALL_)
#undef CALL_
  int call = 0;
  for (size_t i = 1; i < EXPECTED; i++) {
    const char *export;
    if (ask_on(i, driver, &export) > driver) continue; /* the table's stub answered */
    if (call >= log->call_count) fail_msg("%s was not called", export);
    if (strcmp(log->calls[call], export) != 0)
      fail_msg("%s called %s, expected %s", expected[i].name, log->calls[call], export);
    call++;
  }
  assert_int_equal(log->call_count, call);
}

static void check_driver(const char *variant, int driver, ncclshim_cuda_bootstrap bootstrap) {
  ncclshim_cuda *cuda;
  char *path = cuda_fake_path(variant);
  cuda_fake_reset(path);
  assert_int_equal(cuda_open_fake(variant, &cuda, NULL), NCCLSHIM_OK);
  int major, minor;
  assert_int_equal(ncclshim_cuda_driver_version(cuda, &major, &minor), driver);
  assert_int_equal(major * 1000 + minor * 10, driver);
  assert_int_equal(ncclshim_cuda_bootstrap_used(cuda), bootstrap);
  assert_string_equal(ncclshim_cuda_path(cuda), path);
  assert_int_equal(ncclshim_cuda_found_via(cuda), NCCLSHIM_VIA_EXPLICIT);
  assert_int_equal(ncclshim_cuda_is_stub(cuda), 0);
  assert_non_null(strstr(ncclshim_cuda_message(cuda), ncclshim_cuda_bootstrap_name(bootstrap)));
  /* Loading reads the version and never initialises the driver. */
  assert_int_equal(cuda_fake_calls(path, "cuInit"), 0);
  assert_int_equal(cuda_fake_calls(path, "cuDriverGetVersion"), 1);
  if (bootstrap != NCCLSHIM_CUDA_BOOTSTRAP_DLSYM) check_requests(path, driver);
  check_exports_called(cuda, path, driver);
  for (size_t i = 0; i < EXPECTED; i++) {
    const char *export;
    int ask = ask_on(i, driver, &export);
    assert_int_equal(ncclshim_cuda_function_abi(cuda, (int)i), ask <= driver ? ask : 0);
  }
  ncclshim_cuda_close(cuda);
}

static void test_driver_13_0(void **state) {
  (void)state;
  check_driver("13.0", 13000, NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2);
}

static void test_driver_12_2(void **state) {
  (void)state;
  check_driver("12.2", 12020, NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS_V2);
}

static void test_driver_11_3(void **state) {
  (void)state;
  check_driver("11.3", 11030, NCCLSHIM_CUDA_BOOTSTRAP_PROC_ADDRESS);
}

static void test_driver_11_2(void **state) {
  (void)state;
  char *path = cuda_fake_path("11.2");
  check_driver("11.2", 11020, NCCLSHIM_CUDA_BOOTSTRAP_DLSYM);
  assert_int_equal(cuda_fake_log(path)->request_count, 0); /* it has no cuGetProcAddress */
}

/* A function the driver is too old for: unavailable, and its entry says which driver it needs. */
static void test_missing_function_names_the_driver_needed(void **state) {
  (void)state;
  ncclshim_cuda *cuda = cuda_fake_opened("11.3", NCCLSHIM_OK, NULL);
  assert_false(ncclshim_cuda_has_function(cuda, NCCLSHIM_CUDA_FN_cuDeviceGetUuid));
  assert_true(ncclshim_cuda_has_function(cuda, NCCLSHIM_CUDA_FN_cuStreamIsCapturing));
  CUuuid uuid;
  assert_int_equal(ncclshim_cuda_functions(cuda)->cuDeviceGetUuid(&uuid, 0),
                   NCCLSHIM_CUDA_ERROR_NOT_SUPPORTED);
  assert_string_equal(ncclshim_last_error(),
                      "cuDeviceGetUuid needs a CUDA driver >= 11.4; the loaded driver is 11.3");
  ncclshim_cuda_close(cuda);
}

static void test_required_function_too_new(void **state) {
  (void)state;
  ncclshim_cuda *cuda = cuda_fake_opened("10.2", NCCLSHIM_VERSION_TOO_OLD, NULL);
  const char *message = ncclshim_cuda_message(cuda);
  assert_non_null(strstr(message, "CUDA driver 10.2 lacks required functions"));
  assert_non_null(strstr(message, "cuDevicePrimaryCtxRelease (needs a CUDA driver >= 11.0)"));
  assert_int_equal(ncclshim_cuda_driver_version(cuda, NULL, NULL), 0);
  assert_null(ncclshim_cuda_path(cuda));
  assert_int_equal(ncclshim_cuda_functions(cuda)->cuInit(0), NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED);
  ncclshim_cuda_close(cuda);
}

static void test_stub_fake(void **state) {
  (void)state;
  char *path;
  ncclshim_cuda *cuda = cuda_fake_opened("stub", NCCLSHIM_DRIVER_UNAVAILABLE, &path);
  const char *message = ncclshim_cuda_message(cuda);
  expect_stub(cuda, message, path, "the CUDA toolkit's stub library");
  assert_non_null(strstr(message, "CUDA_ERROR_STUB_LIBRARY (34)"));
  assert_int_equal(ncclshim_cuda_attempt_count(cuda), 1);
  assert_int_equal(ncclshim_cuda_attempt(cuda, 0)->result, NCCLSHIM_DRIVER_UNAVAILABLE);
  ncclshim_cuda_close(cuda);
}

static void test_not_a_driver(void **state) {
  (void)state;
  ncclshim_cuda *cuda = cuda_fake_opened("not-cuda", NCCLSHIM_NOT_NCCL, NULL);
  assert_non_null(strstr(ncclshim_cuda_message(cuda), "no cuDriverGetVersion: not a CUDA driver"));
  ncclshim_cuda_close(cuda);
}

/* An explicit path is used alone, even with a good driver already mapped in the process. */
static void test_explicit_path_fails_loudly(void **state) {
  (void)state;
  ncclshim_cuda *good = cuda_fake_opened("13.0", NCCLSHIM_OK, NULL);
  ncclshim_cuda *cuda = cuda_opened("/nonexistent/libcuda.so.1", NCCLSHIM_NOT_FOUND);
  assert_int_equal(ncclshim_cuda_attempt_count(cuda), 1);
  assert_int_equal(ncclshim_cuda_attempt(cuda, 0)->how, NCCLSHIM_VIA_EXPLICIT);
  assert_non_null(strstr(ncclshim_cuda_message(cuda), "/nonexistent/libcuda.so.1"));
  assert_non_null(strstr(ncclshim_last_error(), "/nonexistent/libcuda.so.1"));
  ncclshim_cuda_close(cuda);

  ncclshim_cuda *stub = cuda_fake_opened("stub", NCCLSHIM_DRIVER_UNAVAILABLE, NULL);
  assert_int_equal(ncclshim_cuda_attempt_count(stub), 1);
  ncclshim_cuda_close(stub);
  ncclshim_cuda_close(good);
}

static void test_bad_arguments(void **state) {
  (void)state;
  assert_int_equal(ncclshim_cuda_open(NULL, NULL), NCCLSHIM_INVALID_ARGUMENT);
  ncclshim_cuda_options options = {sizeof(size_t), NULL};
  ncclshim_cuda *cuda = NULL;
  assert_int_equal(ncclshim_cuda_open(&options, &cuda), NCCLSHIM_INVALID_ARGUMENT);
  assert_null(cuda);
  assert_non_null(strstr(ncclshim_last_error(), "options->size"));
  options = (ncclshim_cuda_options)NCCLSHIM_CUDA_OPTIONS_INIT;
  options.path = "";
  assert_int_equal(ncclshim_cuda_open(&options, &cuda), NCCLSHIM_INVALID_ARGUMENT);
  ncclshim_cuda_close(cuda);
}

/* The table as an array of function pointers: no entry may be NULL. */
static void assert_no_null_entry(const ncclshim_cuda_table *t) {
  typedef ncclshim_cu_result (*any)(void);
  assert_int_equal(sizeof(*t) % sizeof(any), 0);
  for (size_t i = 0; i < sizeof(*t) / sizeof(any); i++) {
    any entry;
    memcpy(&entry, (const char *)t + i * sizeof(any), sizeof(any));
    if (entry == NULL) fail_msg("table entry %zu is NULL", i);
  }
}

static void test_never_null_without_driver(void **state) {
  (void)state;
  ncclshim_cuda *cuda = cuda_opened("/nonexistent/libcuda.so.1", NCCLSHIM_NOT_FOUND);
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(cuda);
  assert_no_null_entry(t);
  assert_no_null_entry(ncclshim_cuda_functions(NULL));
  int called = 0;
#define CALL_(name, ask, policy, kind, n, params)                                         \
  if (NCCLSHIM_CUDA_FN_##name != NCCLSHIM_CUDA_FN_cuGetErrorName &&                       \
      NCCLSHIM_CUDA_FN_##name != NCCLSHIM_CUDA_FN_cuGetErrorString) {                     \
    assert_int_equal(t->name ZERO_ARGS_(n, params), NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED); \
    assert_non_null(strstr(ncclshim_last_error(), #name ": no CUDA driver is loaded"));   \
    assert_non_null(strstr(ncclshim_last_error(), "/nonexistent/libcuda.so.1"));          \
    called++;                                                                             \
  }
  NCCLSHIM_CUDA_FUNCTIONS(CALL_)
#undef CALL_
  assert_int_equal(called, NCCLSHIM_CUDA_FUNCTION_COUNT - 2);
  /* The error texts still answer, from ncclshim's table. */
  const char *text = NULL;
  assert_int_equal(t->cuGetErrorString(NCCLSHIM_CUDA_ERROR_STUB_LIBRARY, &text), 0);
  assert_string_equal(text, "CUDA driver is a stub library");
  assert_int_equal(t->cuGetErrorName(12345, &text), NCCLSHIM_CUDA_ERROR_INVALID_VALUE);
  assert_null(text);
  ncclshim_cuda_close(cuda);
}

static void test_never_null_with_missing_functions(void **state) {
  (void)state;
  ncclshim_cuda *cuda = cuda_fake_opened("11.2", NCCLSHIM_OK, NULL);
  assert_no_null_entry(ncclshim_cuda_functions(cuda));
  ncclshim_cuda_close(cuda);
}

static void test_result_texts(void **state) {
  (void)state;
  /* Without a driver: ncclshim's table, which knows the stub's 34. */
  assert_string_equal(ncclshim_cuda_result_name(NULL, 34), "CUDA_ERROR_STUB_LIBRARY");
  assert_string_equal(ncclshim_cuda_result_string(NULL, 34), "CUDA driver is a stub library");
  assert_string_equal(ncclshim_cuda_result_name(NULL, 600), "CUDA_ERROR_NOT_READY");
  assert_string_equal(ncclshim_cuda_result_name(NULL, 12345), "CUDA_ERROR_UNRECOGNIZED");
  assert_string_equal(ncclshim_cuda_result_string(NULL, 12345), "unrecognized CUDA error code");
  /* With a driver: its texts, and ncclshim's for codes it does not know. */
  ncclshim_cuda *cuda = cuda_fake_opened("13.0", NCCLSHIM_OK, NULL);
  assert_string_equal(ncclshim_cuda_result_string(cuda, 600), "fake driver: device not ready");
  assert_string_equal(ncclshim_cuda_result_name(cuda, 600), "CUDA_ERROR_NOT_READY");
  assert_string_equal(ncclshim_cuda_result_string(cuda, 34), "CUDA driver is a stub library");
  ncclshim_cuda_close(cuda);
  char buf[16];
  assert_string_equal(ncclshim_cuda_format_version(12080, buf, sizeof(buf)), "12.8");
  assert_string_equal(ncclshim_cuda_format_version(0, buf, sizeof(buf)), "none");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_matches_the_abi_facts),
      cmocka_unit_test(test_driver_13_0),
      cmocka_unit_test(test_driver_12_2),
      cmocka_unit_test(test_driver_11_3),
      cmocka_unit_test(test_driver_11_2),
      cmocka_unit_test(test_missing_function_names_the_driver_needed),
      cmocka_unit_test(test_required_function_too_new),
      cmocka_unit_test(test_stub_fake),
      cmocka_unit_test(test_not_a_driver),
      cmocka_unit_test(test_explicit_path_fails_loudly),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_never_null_without_driver),
      cmocka_unit_test(test_never_null_with_missing_functions),
      cmocka_unit_test(test_result_texts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
