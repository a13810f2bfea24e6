/* Per-communicator capabilities, the agreement check and the device-API explanation, on the
 * fakes: a trial window registration (once, then cached; a NULL window is a "no"), what
 * ncclCommQueryProperties says, the all-gather of fingerprints with one rank made to differ,
 * its deadline, and the versions named when a device-API call fails with ncclInvalidUsage.
 * The fake driver (tests/fakes/fake_cuda.h) gives host memory as device memory. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm_fixture.h"
#include "tests/fakes/fake_nccl.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/symmem.h"

static void gather_edit(int rank, const char *from, const char *to) {
  ((fake_nccl_edit_fn)(uintptr_t)fake_symbol(fake_current_path(), "fake_nccl_set_gather_edit"))(
      rank, from, to);
}

static void properties(int device_api, int multimem, int gin_type) {
  ((fake_nccl_properties_fn)(uintptr_t)fake_symbol(
      fake_current_path(), "fake_nccl_set_properties"))(device_api, multimem, gin_type);
}

static int cuda_allocations(void) {
  ncclshim_cuda_default();
  return cuda_fake()->live_allocations();
}

static ncclshim_answer ask(ncclshim_comm *comm, ncclshim_comm_capability cap, char *why,
                           size_t size) {
  ncclshim_answer answer = (ncclshim_answer)-1;
  assert_int_equal(ncclshim_comm_has(comm, cap, 1000, &answer, why, size), NCCLSHIM_OK);
  return answer;
}

static void test_windows_register(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  char why[256];
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, why, sizeof(why)),
                   NCCLSHIM_ANSWER_YES);
  assert_int_equal(fake_count("ncclCommWindowRegister"), 1);
  assert_int_equal(fake_count("ncclCommWindowDeregister"), 1);
  assert_int_equal(fake_allocations(), 0);
  /* Cached: no second registration. */
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, why, sizeof(why)),
                   NCCLSHIM_ANSWER_YES);
  assert_int_equal(fake_count("ncclCommWindowRegister"), 1);
}

static void test_windows_null(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  fake_null_window(1);
  char why[256];
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, why, sizeof(why)),
                   NCCLSHIM_ANSWER_NO);
  assert_non_null(strstr(why, "no window"));
  assert_int_equal(fake_allocations(), 0);
  /* The library-level capability keeps its meaning: the library could. */
  assert_true(ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY));
  /* A user's allocation says so with UNAVAILABLE. */
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_UNAVAILABLE);
  assert_message("symmetric windows do not register on this communicator");
}

/* An allocation that saw a NULL window answers for the trial: no registration is tried. */
static void test_windows_cached_from_alloc(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  fake_null_window(1);
  ncclshim_symmem *mem = NULL;
  assert_int_equal(ncclshim_symmem_alloc(comm, 4096, NULL, 1000, &mem), NCCLSHIM_UNAVAILABLE);
  fake_null_window(0);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, NULL, 0), NCCLSHIM_ANSWER_NO);
  assert_int_equal(fake_count("ncclCommWindowRegister"), 1);
}

static int blocking_2273(void **state) { return open_fixture(state, "2.27.3", 1); }

static void test_library_without(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  char why[256];
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS, why, sizeof(why)),
                   NCCLSHIM_ANSWER_NO);
  assert_non_null(strstr(why, "needs NCCL >= 2.28.0"));
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_DEVICE_API, why, sizeof(why)), NCCLSHIM_ANSWER_NO);
  assert_int_equal(fake_count("ncclCommWindowRegister"), 0);
}

static void test_properties(void **state) {
  (void)state;
  char why[256];
  ncclshim_nccl *nccl = fake_open("2.28.9"); /* device API, no ncclCommQueryProperties */
  ncclshim_comm *comm = fake_comm(nccl, 1);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_DEVICE_API, why, sizeof(why)),
                   NCCLSHIM_ANSWER_UNKNOWN);
  assert_non_null(strstr(why, "2.29.2"));
  ncclshim_comm_facts facts = NCCLSHIM_COMM_FACTS_INIT;
  assert_int_equal(ncclshim_comm_query_facts(comm, &facts), NCCLSHIM_UNAVAILABLE);
  ncclshim_comm_free(comm);
  ncclshim_nccl_close(nccl);

  nccl = fake_open("2.29.7");
  comm = fake_comm(nccl, 1);
  properties(1, 0, 3);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_DEVICE_API, why, sizeof(why)), NCCLSHIM_ANSWER_YES);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_MULTIMEM, why, sizeof(why)), NCCLSHIM_ANSWER_NO);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_GIN, why, sizeof(why)), NCCLSHIM_ANSWER_YES);
  assert_non_null(strstr(why, "gdaki"));
  assert_int_equal(ncclshim_comm_query_facts(comm, &facts), NCCLSHIM_OK);
  assert_int_equal(facts.nranks, 2);
  assert_int_equal(facts.device_api, 1);
  assert_int_equal(facts.gin_type, 3);
  assert_int_equal(facts.lsa_teams, 1);
  properties(0, 0, 0);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_DEVICE_API, why, sizeof(why)), NCCLSHIM_ANSWER_NO);
  ncclshim_comm_free(comm);
  ncclshim_nccl_close(nccl);

  /* 2.29.2's layout ends at a one-byte ginType; the fields 2.29.4 added are unknown. */
  nccl = fake_open("2.29.2");
  comm = fake_comm(nccl, 1);
  properties(1, 1, 3);
  facts = (ncclshim_comm_facts)NCCLSHIM_COMM_FACTS_INIT;
  assert_int_equal(ncclshim_comm_query_facts(comm, &facts), NCCLSHIM_OK);
  assert_int_equal(facts.device_api, 1);
  assert_int_equal(facts.multimem, 1);
  assert_int_equal(facts.gin_type, 3);
  assert_int_equal(facts.lsa_teams, -1);
  assert_int_equal(facts.railed_gin_type, -1);
  assert_int_equal(ask(comm, NCCLSHIM_COMM_CAP_GIN, why, sizeof(why)), NCCLSHIM_ANSWER_YES);
  assert_non_null(strstr(why, "gdaki"));
  ncclshim_comm_free(comm);
  ncclshim_nccl_close(nccl);
}

static void test_has_arguments(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_answer answer;
  assert_int_equal(ncclshim_comm_has(comm, NCCLSHIM_COMM_CAP_DEVICE_API, 100, &answer, NULL, 0),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_message("initializing");
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(ncclshim_comm_has(comm, NCCLSHIM_COMM_CAPABILITY_COUNT, 100, &answer, NULL, 0),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_has(comm, NCCLSHIM_COMM_CAP_GIN, -1, &answer, NULL, 0),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_has(NULL, NCCLSHIM_COMM_CAP_GIN, 0, &answer, NULL, 0),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_string_equal(ncclshim_comm_capability_name(NCCLSHIM_COMM_CAP_SYMMETRIC_WINDOWS),
                      "symmetric-windows");
  assert_int_equal(ncclshim_comm_capability_from_name("device-api"), NCCLSHIM_COMM_CAP_DEVICE_API);
  assert_int_equal(ncclshim_comm_capability_from_name("nope"), -1);
}

/* ---- Agreement ----------------------------------------------------------------------------- */

static void test_agree_equal(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  gather_edit(-1, NULL, NULL); /* every slot a copy of this rank's record */
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(fake_count("ncclAllGather"), 1);
  assert_int_equal(cuda_allocations(), 0);
  char record[NCCLSHIM_AGREE_RECORD];
  ncclshim_agree_record(nccl, record, sizeof(record));
  assert_non_null(strstr(record, "nccl=2.29.7\n"));
  assert_non_null(strstr(record, "driver=13.0\n"));
  assert_non_null(strstr(record, "@host="));
}

static void test_agree_finds_a_differing_rank(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  setenv("NCCL_PROTO", "Simple", 1);
  gather_edit(1, "NCCL_PROTO=Simple", "NCCL_PROTO=LL");
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_UNAVAILABLE);
  assert_message("ranks disagree with rank 0");
  assert_message("rank 1 (host ");
  assert_message("NCCL_PROTO=LL, rank 0 has Simple");
  /* A setting rank 0 lacks, and a version. */
  gather_edit(1, "NCCL_PROTO=Simple\n", "NCCL_PROTO=Simple\nNCCL_ALGO=Ring\n");
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_UNAVAILABLE);
  assert_message("NCCL_ALGO=Ring, rank 0 has it unset");
  gather_edit(1, "nccl=2.29.7", "nccl=2.28.3");
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_UNAVAILABLE);
  assert_message("nccl=2.28.3, rank 0 has 2.29.7");
  unsetenv("NCCL_PROTO");
  /* The host line is never compared. */
  gather_edit(1, "@host=", "@host=another-");
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_OK);
  assert_int_equal(cuda_allocations(), 0);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_READY);
}

static void test_agree_deadline_and_errors(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  assert_int_equal(ncclshim_comm_agree(comm, 100), NCCLSHIM_INVALID_ARGUMENT); /* initializing */
  assert_int_equal(ncclshim_comm_wait(comm, 1000), NCCLSHIM_OK);
  fake_async(-1, ncclSuccess); /* the all-gather never finishes: a rank that never came */
  int64_t start = now_ms();
  assert_int_equal(ncclshim_comm_agree(comm, 50), NCCLSHIM_TIMEOUT);
  assert_true(now_ms() - start < 50 + test_slack_ms(950));
  assert_int_equal(cuda_allocations(), 2); /* left to NCCL on purpose */
  cuda_fake()->free_all();
  fake_async(0, ncclRemoteError);
  assert_int_equal(ncclshim_comm_agree(comm, 1000), NCCLSHIM_NCCL_ERROR);
  assert_int_equal(ncclshim_comm_state_of(comm), NCCLSHIM_COMM_FAILED);
  assert_int_equal(ncclshim_comm_agree(NULL, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_nccl_agree(nccl, NULL, 2, 10), NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_comm_abort(comm, 1000), NCCLSHIM_OK);
}

static void test_agree_bare_comm(void **state) {
  ncclshim_comm *comm = fixture_comm(state);
  ncclshim_nccl *nccl = fixture_nccl(state);
  gather_edit(1, "nccl=2.29.7", "nccl=2.30.7");
  assert_int_equal(ncclshim_nccl_agree(nccl, ncclshim_comm_raw(comm), 2, 1000),
                   NCCLSHIM_UNAVAILABLE);
  assert_message("nccl=2.30.7, rank 0 has 2.29.7");
}

/* ---- Device-API mismatches ----------------------------------------------------------------- */

static void test_devapi_explain(void **state) {
  ncclshim_nccl *nccl = fixture_nccl(state);
  char text[512];
  struct {
    size_t size;
    unsigned int magic, version;
    void *rest[4];
  } newer = {88, 0xcafebeefu, 23007, {0}}, same = {88, 0xcafebeefu, 22907, {0}};
  void *old_layout[6] = {NULL, NULL, NULL, NULL, NULL, NULL}; /* 2.28: pointers first */
  ncclshim_devapi_explain(nccl, &newer, text, sizeof(text));
  assert_non_null(strstr(text, "the loaded NCCL is 2.29.7"));
  assert_non_null(strstr(text, "88 bytes from NCCL 2.30.7 headers: newer than the library"));
  ncclshim_devapi_explain(nccl, &same, text, sizeof(text));
  assert_non_null(strstr(text, "from NCCL 2.29.7 headers"));
  assert_null(strstr(text, "newer"));
  ncclshim_devapi_explain(nccl, old_layout, text, sizeof(text));
  assert_non_null(strstr(text, "carries no size or version (a 2.28 layout"));
  /* The checked call names the versions for ncclInvalidUsage from the device API only. */
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, "ncclDevCommCreate"),
                   NCCLSHIM_NCCL_ERROR);
  assert_message("ncclDevCommCreate failed: ncclInvalidUsage (5)");
  assert_message("; device API: the loaded NCCL is 2.29.7");
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, "ncclAllReduce"),
                   NCCLSHIM_NCCL_ERROR);
  assert_null(strstr(ncclshim_last_error(), "device API"));
  assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidArgument, "ncclDevCommCreate"),
                   NCCLSHIM_NCCL_ERROR);
  assert_null(strstr(ncclshim_last_error(), "device API"));
}

/* Every host function of the device API (the list's DEVICE rows) gets the hint, also with
 * words after its name; a name that only starts like one does not. */
#define DEVICE_ROW_REQUIRED(name)
#define DEVICE_ROW_OPTIONAL(name)
#define DEVICE_ROW_DEVICE(name) #name,
#define DEVICE_ROW_(name, version, policy, role, returns, n, params) DEVICE_ROW_##policy(name)
static void test_devapi_hint_every_device_call(void **state) {
  static const char *const rows[] = {NCCLSHIM_NCCL_FUNCTIONS(DEVICE_ROW_)};
  assert_true(sizeof(rows) / sizeof(rows[0]) >= 18);
  ncclshim_nccl *nccl = fixture_nccl(state);
  char call[96];
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, rows[i]), NCCLSHIM_NCCL_ERROR);
    assert_message("; device API: the loaded NCCL is 2.29.7");
    snprintf(call, sizeof(call), "%s (rank 0)", rows[i]);
    assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, call), NCCLSHIM_NCCL_ERROR);
    assert_message("; device API: the loaded NCCL is 2.29.7");
  }
  static const char *const others[] = {"ncclCommSplit", "ncclCommWindowRegister",
                                       "ncclTeamWorldwide", "ncclDevCommCreated", ""};
  for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
    assert_int_equal(ncclshim_nccl_check(nccl, ncclInvalidUsage, others[i]), NCCLSHIM_NCCL_ERROR);
    assert_null(strstr(ncclshim_last_error(), "device API"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_windows_register, nonblocking_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_windows_null, blocking_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_windows_cached_from_alloc, blocking_2297,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_library_without, blocking_2273, release_fixture),
      cmocka_unit_test(test_properties),
      cmocka_unit_test_setup_teardown(test_has_arguments, nonblocking_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_agree_equal, blocking_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_agree_finds_a_differing_rank, blocking_2297,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_agree_deadline_and_errors, nonblocking_2297,
                                      release_fixture),
      cmocka_unit_test_setup_teardown(test_agree_bare_comm, blocking_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_devapi_explain, on_2297, release_fixture),
      cmocka_unit_test_setup_teardown(test_devapi_hint_every_device_call, on_2297, release_fixture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
