/* Every function of the list, through every fake release: a function the release exports
 * reaches it with every argument byte unchanged and its return value comes back; a function
 * it lacks returns ncclInvalidArgument with a message naming the version it needs. */
#include "ncclshim/diag.h"
#include "forward_check.h"

#define FORWARD_TAG table_
#define FORWARD_CALLEE(name) fwd_table->name
FORWARD_DEFINE

static void forward_all(const char *variant, int expected_version) {
  char *path = fake_path(variant);
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = path;
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_version(nccl), expected_version);
  assert_int_equal(ncclshim_nccl_found_via(nccl), NCCLSHIM_VIA_EXPLICIT);
  assert_string_equal(ncclshim_nccl_path(nccl), path);
  for (size_t i = 0; i < FORWARD_COUNT(forwarders_table_); i++) forwarders_table_[i](path, nccl);
  ncclshim_nccl_close(nccl);
}

/* Each fake release with its version, run by the case named first. */
typedef struct release {
  const char *variant;
  int version;
} release;

static void test_release(void **state) {
  const release *r = *state;
  forward_all(r->variant, r->version);
}
#define RELEASE(name, variant, version) \
  TABLE_CASE(name, test_release, (&(const release){(variant), (version)}))

/* The capabilities each release unlocks, by version and symbols. */
static void test_capabilities(void **state) {
  (void)state;
  static const struct {
    const char *variant;
    int present[4];
    int absent[4];
  } cases[] = {
      {"2.18.5",
       {NCCLSHIM_CAP_SPLIT, NCCLSHIM_CAP_NONBLOCKING_INIT, -1},
       {NCCLSHIM_CAP_MEM_ALLOC, NCCLSHIM_CAP_FP8, -1}},
      {"2.21.5",
       {NCCLSHIM_CAP_MEM_ALLOC, NCCLSHIM_CAP_USER_BUFFER_REGISTER, -1},
       {NCCLSHIM_CAP_SCALABLE_INIT, NCCLSHIM_CAP_WINDOW_REGISTER, -1}},
      {"2.27.3",
       {NCCLSHIM_CAP_WINDOW_REGISTER, NCCLSHIM_CAP_SHRINK, NCCLSHIM_CAP_FP8, -1},
       {NCCLSHIM_CAP_SYMMETRIC_MEMORY, NCCLSHIM_CAP_DEVICE_API, -1}},
      {"2.28.3",
       {NCCLSHIM_CAP_SYMMETRIC_MEMORY, NCCLSHIM_CAP_ALLTOALL, NCCLSHIM_CAP_DEVICE_API, -1},
       {NCCLSHIM_CAP_REVOKE, NCCLSHIM_CAP_DEVICE_POINTERS, -1}},
      {"2.28.9",
       {NCCLSHIM_CAP_SYMMETRIC_MEMORY, NCCLSHIM_CAP_REVOKE, NCCLSHIM_CAP_DEVICE_API, -1},
       {NCCLSHIM_CAP_TIMEOUT_RESULT, NCCLSHIM_CAP_GROW, NCCLSHIM_CAP_DEVICE_POINTERS, -1}},
      {"2.29.7",
       {NCCLSHIM_CAP_DEVICE_API, NCCLSHIM_CAP_DEVICE_POINTERS, NCCLSHIM_CAP_SUSPEND, -1},
       {NCCLSHIM_CAP_PARAMS, -1}},
      {"2.30.7",
       {NCCLSHIM_CAP_TIMEOUT_RESULT, NCCLSHIM_CAP_PARAMS, NCCLSHIM_CAP_SUSPEND, -1},
       {NCCLSHIM_CAP_COLL_CONFIG, NCCLSHIM_CAP_ENCRYPTION, NCCLSHIM_CAP_CFT, -1}},
      {"2.32.3",
       {NCCLSHIM_CAP_COLL_CONFIG, NCCLSHIM_CAP_LAUNCH_EVENT, NCCLSHIM_CAP_ENCRYPTION, -1},
       {-1}},
      {"2.32.3", {NCCLSHIM_CAP_NVLS_HOST_MODE, NCCLSHIM_CAP_CFT, NCCLSHIM_CAP_PARAMS, -1}, {-1}},
      {"missing-optional",
       {NCCLSHIM_CAP_REVOKE, -1},
       {NCCLSHIM_CAP_WINDOW_REGISTER, NCCLSHIM_CAP_SYMMETRIC_MEMORY, -1}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
    options.path = fake_path(cases[c].variant);
    ncclshim_nccl *nccl = NULL;
    assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
    for (int i = 0; cases[c].present[i] >= 0; i++)
      assert_true(ncclshim_nccl_has(nccl, cases[c].present[i]));
    for (int i = 0; cases[c].absent[i] >= 0; i++) {
      char why[256];
      assert_false(ncclshim_nccl_has(nccl, cases[c].absent[i]));
      assert_true(
          strlen(ncclshim_nccl_capability_reason(nccl, cases[c].absent[i], why, sizeof(why))) > 0);
    }
    ncclshim_nccl_close(nccl);
  }
}

/* An optional function missing although the version says it exists: recorded as unexpected,
 * and the message says the build is broken. */
static void test_unexpected_missing(void **state) {
  (void)state;
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = fake_path("missing-optional");
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
  assert_true(ncclshim_nccl_unexpectedly_missing(nccl, NCCLSHIM_FN_ncclCommWindowRegister));
  assert_false(ncclshim_nccl_unexpectedly_missing(nccl, NCCLSHIM_FN_ncclCommWindowDeregister));
  assert_false(ncclshim_nccl_unexpectedly_missing(nccl, NCCLSHIM_FN_ncclCommSuspend));
  ncclshim_window_t win = NULL;
  assert_int_equal(ncclshim_nccl_functions(nccl)->ncclCommWindowRegister(NULL, NULL, 0, &win, 0),
                   ncclInvalidArgument);
  assert_non_null(strstr(ncclshim_last_error(), "broken or customised build"));
  ncclshim_nccl_close(nccl);
}

/* Two different NCCLs side by side, each table reaching its own library. */
static void test_two_handles(void **state) {
  (void)state;
  char *old_path = fake_path("2.21.5"), *new_path = fake_path("2.28.9");
  ncclshim_nccl_options a = NCCLSHIM_NCCL_OPTIONS_INIT, b = NCCLSHIM_NCCL_OPTIONS_INIT;
  a.path = old_path;
  b.path = new_path;
  ncclshim_nccl *old_nccl = NULL, *new_nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&a, &old_nccl), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_open(&b, &new_nccl), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_version(old_nccl), 22105);
  assert_int_equal(ncclshim_nccl_version(new_nccl), 22809);
  ncclshim_nccl_functions(old_nccl)->ncclGroupStart();
  ncclshim_nccl_functions(new_nccl)->ncclGroupEnd();
  assert_string_equal(fake_last_call(old_path)->function, "ncclGroupStart");
  assert_int_equal(fake_last_call(old_path)->version_code, 22105);
  assert_string_equal(fake_last_call(new_path)->function, "ncclGroupEnd");
  assert_int_equal(fake_last_call(new_path)->version_code, 22809);
  /* The old one lacks windows: its stub names the old library, not the new one. */
  ncclshim_nccl_functions(old_nccl)->ncclCommWindowDeregister(NULL, NULL);
  assert_non_null(strstr(ncclshim_last_error(), old_path));
  assert_null(strstr(ncclshim_last_error(), new_path));
  ncclshim_nccl_close(old_nccl);
  ncclshim_nccl_close(new_nccl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      RELEASE(test_2_18, "2.18.5", 21805),   RELEASE(test_2_21, "2.21.5", 22105),
      RELEASE(test_2_27, "2.27.3", 22703),   RELEASE(test_2_28_3, "2.28.3", 22803),
      RELEASE(test_2_28_9, "2.28.9", 22809), RELEASE(test_2_29_7, "2.29.7", 22907),
      RELEASE(test_2_30, "2.30.7", 23007),   RELEASE(test_2_32, "2.32.3", 23203),
      cmocka_unit_test(test_capabilities),   cmocka_unit_test(test_unexpected_missing),
      cmocka_unit_test(test_two_handles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
