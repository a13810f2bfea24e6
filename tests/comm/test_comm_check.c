/* Checked calls: an ncclResult_t becomes a status and a message carrying the call's name,
 * NCCL's text for the code and NCCL's last error; unknown codes never index a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "comm_fakes.h"
#include "support.h"

static void test_result_names(void **state) {
  (void)state;
  static const char *const names[] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
      "ncclRemoteError",   "ncclInProgress",         "ncclTimeout"};
  for (int i = 0; i < 9; i++) {
    assert_string_equal(ncclshim_nccl_result_name(i), names[i]);
    assert_int_equal(ncclshim_nccl_result_known(i), 1);
  }
  static const int unknown[] = {9, -1, 0x7fffffff};
  for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
    assert_string_equal(ncclshim_nccl_result_name(unknown[i]), "unknown");
    assert_int_equal(ncclshim_nccl_result_known(unknown[i]), 0);
  }
}

/* Success and "in progress" are OK and leave the thread's message alone. */
static void test_success_and_in_progress(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  assert_int_equal(ncclshim_nccl_check(nccl, (ncclResult_t)4, "marker"), NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_nccl_check(nccl, ncclSuccess, "ncclAllReduce"), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInProgress, "ncclAllReduce"), NCCLSHIM_OK);
  assert_message("marker failed");
  assert_int_equal(fake_count("ncclGetErrorString"), 1);
  ncclshim_nccl_close(nccl);
}

static void test_error_carries_both_texts(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  fake_last_error("AllReduce : invalid type 99");
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidArgument, "ncclAllReduce"),
                   NCCLSHIM_NCCL_ERROR);
  assert_string_equal(ncclshim_last_error(),
                      "ncclAllReduce failed: ncclInvalidArgument (4): fake NCCL string; NCCL's "
                      "last error: AllReduce : invalid type 99");
  const fake_nccl_call *call = fake_last_call(fake_current_path());
  assert_string_equal(call->function, "ncclGetLastError");
  ncclshim_nccl_close(nccl);
}

/* An NCCL without ncclGetLastError (< 2.13, or a custom build): no last-error part, and the
 * "missing function" stub is never called (its message would land in ours). */
static void test_no_last_error_function(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("no-last-error");
  assert_int_equal(ncclshim_nccl_check(nccl, ncclRemoteError, "ncclSend"), NCCLSHIM_NCCL_ERROR);
  assert_string_equal(ncclshim_last_error(),
                      "ncclSend failed: ncclRemoteError (6): fake NCCL string");
  ncclshim_nccl_close(nccl);
}

static void test_timeout_code(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.30.7");
  assert_int_equal(ncclshim_nccl_check(nccl, (ncclResult_t)8, "ncclWaitSignal"),
                   NCCLSHIM_NCCL_ERROR);
  assert_message("ncclWaitSignal failed: ncclTimeout (8): fake NCCL string");
  ncclshim_nccl_close(nccl);
}

/* Codes no release has used are reported as numbers, and not passed to ncclGetErrorString. */
static void test_unknown_codes(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  static const int codes[] = {9, 42, -3, 0x7fffffff};
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
    char expected[96];
    snprintf(expected, sizeof(expected), "ncclBroadcast failed: unknown result code %d", codes[i]);
    assert_int_equal(ncclshim_nccl_check(nccl, (ncclResult_t)codes[i], "ncclBroadcast"),
                     NCCLSHIM_NCCL_ERROR);
    assert_message(expected);
  }
  assert_int_equal(fake_count("ncclGetErrorString"), 0);
  ncclshim_nccl_close(nccl);
}

/* Without a loaded NCCL the texts come from ncclshim's own copy. */
static void test_without_nccl(void **state) {
  (void)state;
  ncclshim_nccl *nccl = open_absent();
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, "ncclSend"), NCCLSHIM_NCCL_ERROR);
  assert_string_equal(ncclshim_last_error(),
                      "ncclSend failed: ncclInvalidUsage (5): invalid usage (run with "
                      "NCCL_DEBUG=WARN for details)");
  ncclshim_nccl_close(nccl);
}

/* NULL means the default handle (NCCLSHIM_NCCL_LIBRARY names the 2.28.9 fake here); NULL
 * call reads "NCCL call". */
static void test_defaults(void **state) {
  (void)state;
  ncclshim_nccl *nccl = fake_open("2.28.9");
  fake_last_error("from the default handle");
  assert_int_equal(ncclshim_nccl_check(NULL, ncclSystemError, NULL), NCCLSHIM_NCCL_ERROR);
  assert_string_equal(ncclshim_last_error(),
                      "NCCL call failed: ncclSystemError (2): fake NCCL string; NCCL's last "
                      "error: from the default handle");
  ncclshim_nccl_close(nccl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_result_names),
      cmocka_unit_test(test_success_and_in_progress),
      cmocka_unit_test(test_error_carries_both_texts),
      cmocka_unit_test(test_no_last_error_function),
      cmocka_unit_test(test_timeout_code),
      cmocka_unit_test(test_unknown_codes),
      cmocka_unit_test(test_without_nccl),
      cmocka_unit_test(test_defaults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
