/* Decoding ncclGetVersion codes of both encodings, and the metadata tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "ncclshim/comm.h"
#include "ncclshim/ncclshim.h"

static void test_decode(void **state) {
  (void)state;
  static const struct {
    int code, packed, major, minor, patch;
  } known[] = {
      {2304, 20304, 2, 3, 4},   {2804, 20804, 2, 8, 4},   {20908, 20908, 2, 9, 8},
      {21003, 21003, 2, 10, 3}, {21801, 21801, 2, 18, 1}, {22809, 22809, 2, 28, 9},
      {23007, 23007, 2, 30, 7}, {30000, 30000, 3, 0, 0},  {32101, 32101, 3, 21, 1},
  };
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    int major = -1, minor = -1, patch = -1;
    assert_int_equal(ncclshim_decode_version(known[i].code, &major, &minor, &patch),
                     known[i].packed);
    assert_int_equal(major, known[i].major);
    assert_int_equal(minor, known[i].minor);
    assert_int_equal(patch, known[i].patch);
  }
  static const int invalid[] = {0, -1, -22809, 1, 999};
  for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
    int major = -7;
    assert_int_equal(ncclshim_decode_version(invalid[i], &major, NULL, NULL), 0);
    assert_int_equal(major, -7); /* untouched */
  }
}

static void test_format(void **state) {
  (void)state;
  char buf[16];
  assert_string_equal(ncclshim_format_version(22809, buf, sizeof(buf)), "2.28.9");
  assert_string_equal(ncclshim_format_version(0, buf, sizeof(buf)), "none");
  char tiny[4];
  assert_string_equal(ncclshim_format_version(22809, tiny, sizeof(tiny)), "2.2");
}

static void test_function_metadata(void **state) {
  (void)state;
  assert_string_equal(ncclshim_nccl_function_name(NCCLSHIM_FN_ncclAllReduce), "ncclAllReduce");
  assert_int_equal(ncclshim_nccl_function_version(NCCLSHIM_FN_ncclCommWindowRegister), 22703);
  assert_true(ncclshim_nccl_function_required(NCCLSHIM_FN_ncclSend));
  assert_false(ncclshim_nccl_function_required(NCCLSHIM_FN_ncclCommSplit));
  assert_string_equal(ncclshim_nccl_function_name(NCCLSHIM_NCCL_FUNCTION_COUNT),
                      "(unknown function)");
  assert_int_equal(ncclshim_nccl_function_version(-1), 0);
}

static void test_capability_metadata(void **state) {
  (void)state;
  assert_string_equal(ncclshim_capability_name(NCCLSHIM_CAP_SYMMETRIC_MEMORY), "symmetric-memory");
  assert_int_equal(ncclshim_capability_version(NCCLSHIM_CAP_SYMMETRIC_MEMORY), 22800);
  assert_int_equal(ncclshim_capability_from_name("revoke"), NCCLSHIM_CAP_REVOKE);
  assert_int_equal(ncclshim_capability_from_name("no-such-thing"), -1);
  assert_int_equal(ncclshim_capability_from_name(NULL), -1);
  assert_null(ncclshim_capability_name(NCCLSHIM_CAPABILITY_COUNT));
  for (int c = 0; c < NCCLSHIM_CAPABILITY_COUNT; c++)
    assert_int_equal(ncclshim_capability_from_name(ncclshim_capability_name(c)), c);
}

static void test_status_texts(void **state) {
  (void)state;
  assert_string_equal(ncclshim_status_name(NCCLSHIM_OK), "OK");
  assert_string_equal(ncclshim_status_name(NCCLSHIM_FORKED), "FORKED");
  assert_string_equal(ncclshim_status_name(999), "UNKNOWN");
  assert_string_equal(ncclshim_status_string(NCCLSHIM_NOT_FOUND), "no library file was found");
  assert_string_equal(ncclshim_found_via_name(NCCLSHIM_VIA_PRELOADED), "already-loaded");
  assert_string_equal(ncclshim_nccl_result_string(8), "timeout");
  assert_string_equal(ncclshim_nccl_result_string(9), "unknown result code");
  assert_string_equal(ncclshim_nccl_result_string(-1), "unknown result code");
}

/* The role column: the rows marked QUERY are exactly these, in the list's order (a row that
 * gains or loses the mark must be looked at here too), and every row's role is QUERY or
 * ACTION: any other word in the column stops this file from compiling. */
static const char *const expected_queries[] = {
    "ncclGetVersion",
    "ncclGetErrorString",
    "ncclGetLastError",
    "ncclCommGetAsyncError",
    "ncclCommCount",
    "ncclCommCuDevice",
    "ncclCommUserRank",
    "ncclWinGetUserPtr",
    "ncclCommMemStats",
    "ncclParamBind",
    "ncclParamGetI8",
    "ncclParamGetI16",
    "ncclParamGetI32",
    "ncclParamGetI64",
    "ncclParamGetU8",
    "ncclParamGetU16",
    "ncclParamGetU32",
    "ncclParamGetU64",
    "ncclParamGetStr",
    "ncclParamGet",
    "ncclParamGetParameter",
    "ncclParamGetAllParameterKeys",
    "ncclTeamWorld",
    "ncclTeamLsa",
    "ncclTeamRail",
    "ncclTeamRankToWorld",
    "ncclTeamRankToLsa",
    "ncclLsaBarrierCreateRequirement",
    "ncclLLA2ACalcSlots",
    "ncclLLA2ACreateRequirement",
    "ncclGinBarrierCreateRequirement",
    "ncclCommQueryProperties",
    "ncclGetLsaDevicePointer",
    "ncclGetLsaMultimemDevicePointer",
    "ncclGetMultimemDevicePointer",
    "ncclGetPeerDevicePointer",
    "ncclGinOutboxCreateRequirement",
    "ncclGinInboxA2ACreateRequirement",
    "ncclGetMultimemDeviceLeInfo",
    "ncclGetCftDeviceLeInfo",
    "ncclGetPeerDeviceLeInfo",
    "ncclTeamCft",
    "ncclTeamCftMultimem",
    "ncclCftBarrierCreateRequirement",
};
#define QUERY_NAME_(name, version, policy, role, returns, n, params) \
  NCCLSHIM_NCCL_IS_QUERY(role) ? #name : NULL,
#define ACTION_COUNT_(name, version, policy, role, returns, n, params) \
  +!NCCLSHIM_NCCL_IS_QUERY(role)
static const char *const query_or_null[] = {NCCLSHIM_NCCL_FUNCTIONS(QUERY_NAME_)};

static void test_role_column(void **state) {
  (void)state;
  size_t queries = 0;
  for (size_t i = 0; i < NCCLSHIM_NCCL_FUNCTION_COUNT; i++) {
    if (query_or_null[i] == NULL) continue;
    assert_true(queries < sizeof expected_queries / sizeof *expected_queries);
    assert_string_equal(query_or_null[i], expected_queries[queries]);
    queries++;
  }
  assert_int_equal(queries, sizeof expected_queries / sizeof *expected_queries);
  assert_int_equal(0 NCCLSHIM_NCCL_FUNCTIONS(ACTION_COUNT_),
                   NCCLSHIM_NCCL_FUNCTION_COUNT - queries);
  assert_int_equal(NCCLSHIM_NCCL_IS_QUERY(QUERY), 1);
  assert_int_equal(NCCLSHIM_NCCL_IS_QUERY(ACTION), 0);
}

/* The dispatch on the return kind: the "unavailable" answer of each kind. */
#define NO_RESULT ncclInternalError
static ncclResult_t unavailable_result(void) { NCCLSHIM_NCCL_UNAVAILABLE(RESULT, NO_RESULT, "") }
static const char *unavailable_string(void) { NCCLSHIM_NCCL_UNAVAILABLE(STRING, NO_RESULT, "t") }
static int unavailable_int(void) { NCCLSHIM_NCCL_UNAVAILABLE(INT, NO_RESULT, "") }
static ncclshim_team_t unavailable_team(void) { NCCLSHIM_NCCL_UNAVAILABLE(TEAM, NO_RESULT, "") }
static int passed_on(void) { NCCLSHIM_NCCL_RETURN_IF_VALUE(INT) 5; }

static void test_return_kinds(void **state) {
  (void)state;
  assert_int_equal(unavailable_result(), ncclInternalError);
  assert_string_equal(unavailable_string(), "t");
  assert_int_equal(unavailable_int(), -1);
  ncclshim_team_t team = unavailable_team();
  assert_int_equal(team.nRanks, 0);
  assert_int_equal(team.rank, -1);
  assert_int_equal(passed_on(), 5);
}

static void *other_thread(void *arg) {
  (void)arg;
  /* Each thread has its own: nothing here yet, whatever the main thread saw. */
  return (void *)(long)ncclshim_last_nccl_result();
}

/* The number behind ncclshim_nccl_check's message, without parsing it. */
static void test_last_nccl_result(void **state) {
  (void)state;
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = "/nonexistent/libnccl.so.2"; /* no library: ncclshim's own texts answer */
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_NOT_FOUND);
  assert_int_equal(ncclshim_last_nccl_result(), 0);
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidArgument, "ncclAllReduce"),
                   NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_last_nccl_result(), ncclInvalidArgument);
  assert_non_null(strstr(ncclshim_last_error(), "ncclInvalidArgument (4)"));
  /* Success leaves it, as it leaves the message; an unknown code is kept as it is. */
  assert_int_equal(ncclshim_nccl_check(nccl, ncclSuccess, "ncclAllReduce"), NCCLSHIM_OK);
  assert_int_equal(ncclshim_last_nccl_result(), ncclInvalidArgument);
  assert_int_equal(ncclshim_nccl_check(nccl, (ncclResult_t)-7, NULL), NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_last_nccl_result(), -7);
  /* The code belongs to the message: a later failure of another kind clears it. */
  ncclshim_nccl *again = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &again), NCCLSHIM_NOT_FOUND);
  assert_int_equal(ncclshim_last_nccl_result(), 0);
  pthread_t thread;
  void *seen = (void *)1;
  assert_int_equal(pthread_create(&thread, NULL, other_thread, NULL), 0);
  assert_int_equal(pthread_join(thread, &seen), 0);
  assert_int_equal((long)seen, 0);
  ncclshim_nccl_close(nccl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode),
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_function_metadata),
      cmocka_unit_test(test_capability_metadata),
      cmocka_unit_test(test_status_texts),
      cmocka_unit_test(test_last_nccl_result),
      cmocka_unit_test(test_return_kinds),
      cmocka_unit_test(test_role_column),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
