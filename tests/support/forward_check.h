/* The generic forwarding check, one checker per row of the function list, shared by the
 * table tests and the drop-in tests. Before FORWARD_DEFINE, define
 *   FORWARD_TAG           a token naming this set: forward_<TAG><name>, forwarders_<TAG>
 *   FORWARD_CALLEE(name)  the expression called: fwd_table->name, name, p##name, ...
 * A checker fills every argument with a distinct byte pattern and makes the call. When the
 * library has the function it checks the fake's record (the function reached, each argument
 * byte, the return value); otherwise the unavailable stub's answer and message. */
#ifndef NCCLSHIM_FORWARD_CHECK_H
#define NCCLSHIM_FORWARD_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ncclshim/ncclshim.h"
#include "support.h"

/* Distinct byte patterns, one buffer per argument, aligned for any type. */
static _Alignas(max_align_t) unsigned char patterns[FAKE_MAX_ARGS][FAKE_MAX_ARG_BYTES];
static int next_pattern;

static const void *pattern(size_t size) {
  assert_true(size <= FAKE_MAX_ARG_BYTES);
  unsigned char *p = patterns[next_pattern];
  for (size_t i = 0; i < size; i++) p[i] = (unsigned char)(0x11 * (next_pattern + 1) + i);
  next_pattern++;
  return p;
}

static void check_arguments(const fake_nccl_call *call, const char *name, int n,
                            const size_t *sizes) {
  assert_string_equal(call->function, name);
  assert_int_equal(call->nargs, n);
  for (int i = 0; i < n; i++) {
    assert_int_equal(call->size[i], sizes[i]);
    assert_memory_equal(call->bytes[i], patterns[i], sizes[i]);
  }
}

static void check_unavailable(const char *name, int version, const char *path) {
  char need[16], expected[128];
  snprintf(expected, sizeof(expected), "%s needs NCCL >= %s", name,
           ncclshim_format_version(version, need, sizeof(need)));
  assert_non_null(strstr(ncclshim_last_error(), expected));
  assert_non_null(strstr(ncclshim_last_error(), path));
}

#define DECLARE_ARG_(type, name) type name = *(type *)pattern(sizeof(type));
#define SIZE_OF_(type, name) sizeof(type),
#define CHECK_RETURN_RESULT(value) assert_int_equal(value, ncclRemoteError);
#define CHECK_RETURN_STRING(value) assert_string_equal(value, "fake NCCL string");
#define CHECK_RETURN_VOID(value)
#define CHECK_RETURN_INT(value) assert_int_equal(value, ncclRemoteError);
#define CHECK_RETURN_TEAM(value)                       \
  assert_int_equal((value).nRanks, ncclRemoteError);   \
  assert_int_equal((value).rank, ncclRemoteError + 1); \
  assert_int_equal((value).stride, ncclRemoteError + 2);
#define CHECK_MISSING_RESULT(value) assert_int_equal(value, ncclInvalidArgument);
#define CHECK_MISSING_STRING(value) assert_ptr_equal(value, ncclshim_last_error());
#define CHECK_MISSING_VOID(value)
#define CHECK_MISSING_INT(value) assert_int_equal(value, -1);
#define CHECK_MISSING_TEAM(value)      \
  assert_int_equal((value).nRanks, 0); \
  assert_int_equal((value).rank, -1);  \
  assert_int_equal((value).stride, 0);
#define CALL_RESULT(expr) ncclResult_t fwd_ret = expr;
#define CALL_STRING(expr) const char *fwd_ret = expr;
#define CALL_INT(expr) int fwd_ret = expr;
#define CALL_TEAM(expr) ncclshim_team_t fwd_ret = expr;
#define CALL_VOID(expr) \
  expr;                 \
  int fwd_ret = 0;      \
  (void)fwd_ret;

#define FWD_CAT_(a, b, c) a##b##c
#define FWD_CAT(a, b, c) FWD_CAT_(a, b, c)
#define FORWARD_(name, version, policy, role, returns, n, params)                          \
  static void FWD_CAT(forward_, FORWARD_TAG, name)(const char *fwd_path,                   \
                                                   ncclshim_nccl *fwd_nccl) {              \
    next_pattern = 0;                                                                      \
    NCCLSHIM_PP_EACH(n, DECLARE_ARG_, params)                                              \
    const size_t fwd_sizes[FAKE_MAX_ARGS + 1] = {NCCLSHIM_PP_EACH(n, SIZE_OF_, params) 0}; \
    const ncclshim_nccl_table *fwd_table = ncclshim_nccl_functions(fwd_nccl);              \
    (void)fwd_table;                                                                       \
    fake_set_result(fwd_path, ncclRemoteError);                                            \
    CALL_##returns(FORWARD_CALLEE(name) NCCLSHIM_PP_ARGS(n, params));                      \
    if (ncclshim_nccl_version(fwd_nccl) >= version) {                                      \
      assert_true(ncclshim_nccl_has_function(fwd_nccl, NCCLSHIM_FN_##name));               \
      check_arguments(fake_last_call(fwd_path), #name, n, fwd_sizes);                      \
      CHECK_RETURN_##returns(fwd_ret)                                                      \
    } else {                                                                               \
      assert_false(ncclshim_nccl_has_function(fwd_nccl, NCCLSHIM_FN_##name));              \
      CHECK_MISSING_##returns(fwd_ret) check_unavailable(#name, version, fwd_path);        \
    }                                                                                      \
  }

/* Every row but ncclGetVersion, the fakes' one hand-written function (the loader's own use
 * checks it): PROBE_ turns that name into "~, 1," so that NCCLSHIM_PP_SELECT picks 1 for it alone.
 */
#define PROBE_ncclGetVersion ~, 1,
#define GENERATE_0(...) FORWARD_(__VA_ARGS__)
#define GENERATE_1(...)
#define GENERATE_(name, ...) \
  NCCLSHIM_PP_CAT(GENERATE_, NCCLSHIM_PP_SELECT(PROBE_##name, 0))(name, __VA_ARGS__)
#define LIST_0(name) FWD_CAT(forward_, FORWARD_TAG, name),
#define LIST_1(name)
#define LIST_(name, ...) NCCLSHIM_PP_CAT(LIST_, NCCLSHIM_PP_SELECT(PROBE_##name, 0))(name)

/* forward_<TAG><name> for every row, and forwarders_<TAG>[] listing them. */
#define FORWARD_DEFINE                                        \
  NCCLSHIM_NCCL_FUNCTIONS(GENERATE_)                          \
  static void (*const FWD_CAT(forwarders_, FORWARD_TAG, )[])( \
      const char *, ncclshim_nccl *) = {NCCLSHIM_NCCL_FUNCTIONS(LIST_)};

#define FORWARD_COUNT(array) (sizeof(array) / sizeof((array)[0]))

#endif
