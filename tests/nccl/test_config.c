/* ncclConfig_t from any nccl.h: filled within the caller's size, fields accepted only when
 * the loaded library honours them. */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ncclshim/ncclshim.h"
#include "support.h"

static ncclshim_nccl *open_fake(const char *variant) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = fake_path(variant);
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
  return nccl;
}

/* The layouts of each nccl.h generation (48, 72, 80, 88, 96, 120) and a future larger one. */
static void test_init_respects_size(void **state) {
  (void)state;
  static const size_t sizes[] = {16, 48, 72, 80, 88, 96, 120, 200};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    _Alignas(max_align_t) unsigned char buf[256];
    memset(buf, 0xab, sizeof(buf));
    assert_int_equal(ncclshim_nccl_config_init(buf, sizes[i]), NCCLSHIM_OK);
    for (size_t b = sizes[i]; b < sizeof(buf); b++) assert_int_equal(buf[b], 0xab);
    struct ncclshim_nccl_config seen;
    memcpy(&seen, buf, sizeof(seen));
    assert_int_equal(seen.size, sizes[i] < 120 ? sizes[i] : 120);
    assert_int_equal(seen.magic, 0xcafebeef);
    assert_int_equal(seen.version, 23203);
    if (sizes[i] >= 48) {
      assert_int_equal(seen.blocking, INT_MIN);
      assert_int_equal(seen.trafficClass, INT_MIN); /* never the padding a 2.26 library reads */
      assert_null(seen.netName);
    }
    if (sizes[i] >= 96) assert_int_equal(seen.graphStreamOrdering, INT_MIN);
    if (sizes[i] >= 120) assert_int_equal(seen.nvlsHostMode, INT_MIN);
  }
}

static void test_init_refuses_bad_input(void **state) {
  (void)state;
  char small[8];
  assert_int_equal(ncclshim_nccl_config_init(small, sizeof(small)), NCCLSHIM_INVALID_ARGUMENT);
  assert_non_null(strstr(ncclshim_last_error(), "too small"));
  assert_int_equal(ncclshim_nccl_config_init(NULL, 96), NCCLSHIM_INVALID_ARGUMENT);
  ncclConfig_t config;
  assert_int_equal(NCCLSHIM_NCCL_CONFIG_INIT(&config), NCCLSHIM_OK);
  assert_int_equal(config.size, sizeof(ncclConfig_t));
}

static void test_fields_honoured_by_version(void **state) {
  (void)state;
  ncclshim_nccl *old_nccl = open_fake("2.21.5"), *new_nccl = open_fake("2.28.9");
  assert_int_equal(ncclshim_nccl_config_check(old_nccl, 96, NCCLSHIM_CONFIG_BLOCKING), NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_config_check(old_nccl, 96, NCCLSHIM_CONFIG_CTA_POLICY),
                   NCCLSHIM_UNAVAILABLE);
  assert_non_null(strstr(ncclshim_last_error(), "CTAPolicy needs NCCL >= 2.27.0; loaded 2.21.5"));
  assert_int_equal(ncclshim_nccl_config_check(new_nccl, 96, NCCLSHIM_CONFIG_CTA_POLICY),
                   NCCLSHIM_OK);
  assert_int_equal(ncclshim_nccl_config_check(new_nccl, 96, NCCLSHIM_CONFIG_GRAPH_USAGE_MODE),
                   NCCLSHIM_UNAVAILABLE);
  /* A 48-byte ncclConfig_t (a 2.18 nccl.h) has no room for commName. */
  assert_int_equal(ncclshim_nccl_config_check(new_nccl, 48, NCCLSHIM_CONFIG_COMM_NAME),
                   NCCLSHIM_UNAVAILABLE);
  assert_non_null(
      strstr(ncclshim_last_error(), "lies past the end of this ncclConfig_t (48 bytes)"));
  assert_int_equal(ncclshim_nccl_config_check(new_nccl, 96, NCCLSHIM_CONFIG_FIELD_COUNT),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(ncclshim_nccl_config_check(NULL, 96, NCCLSHIM_CONFIG_BLOCKING),
                   NCCLSHIM_UNAVAILABLE);
  assert_non_null(strstr(ncclshim_last_error(), "no NCCL is loaded"));
  ncclshim_nccl_close(old_nccl);
  ncclshim_nccl_close(new_nccl);
}

static void test_set_fields(void **state) {
  (void)state;
  ncclshim_nccl *old_nccl = open_fake("2.21.5"), *new_nccl = open_fake("2.28.9");
  ncclConfig_t config;
  memset(&config, 0, sizeof(config));
  assert_int_equal(
      ncclshim_nccl_config_set_int(new_nccl, &config, sizeof(config), NCCLSHIM_CONFIG_BLOCKING, 0),
      NCCLSHIM_INVALID_ARGUMENT); /* not initialised */
  NCCLSHIM_NCCL_CONFIG_INIT(&config);
  assert_int_equal(
      ncclshim_nccl_config_set_int(new_nccl, &config, sizeof(config), NCCLSHIM_CONFIG_BLOCKING, 0),
      NCCLSHIM_OK);
  assert_int_equal(config.blocking, 0);
  assert_int_equal(ncclshim_nccl_config_set_str(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_CONFIG_COMM_NAME, "experts"),
                   NCCLSHIM_OK);
  assert_string_equal(config.commName, "experts");
  assert_int_equal(ncclshim_nccl_config_set_str(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_CONFIG_BLOCKING, "x"),
                   NCCLSHIM_INVALID_ARGUMENT); /* an int field */
  /* Refused by the old library: left UNDEF, so nothing is silently half-applied. */
  assert_int_equal(ncclshim_nccl_config_set_int(old_nccl, &config, sizeof(config),
                                                NCCLSHIM_CONFIG_CTA_POLICY, 2),
                   NCCLSHIM_UNAVAILABLE);
  assert_int_equal(config.CTAPolicy, INT_MIN);
  assert_string_equal(ncclshim_config_field_name(NCCLSHIM_CONFIG_NVLS_CTAS), "nvlsCTAs");
  assert_null(ncclshim_config_field_name(NCCLSHIM_CONFIG_FIELD_COUNT));
  ncclshim_nccl_close(old_nccl);
  ncclshim_nccl_close(new_nccl);
}

/* ---- The five ncclConfig_t fields of 2.32.3 --------------------------------------------- */

static void test_fields_of_2_32(void **state) {
  (void)state;
  ncclshim_nccl *old_nccl = open_fake("2.30.7"), *new_nccl = open_fake("2.32.3");
  ncclConfig_t config;
  NCCLSHIM_NCCL_CONFIG_INIT(&config);
  assert_int_equal(ncclshim_nccl_config_set_int(old_nccl, &config, sizeof(config),
                                                NCCLSHIM_CONFIG_NVLS_HOST_MODE,
                                                ncclNvlsHostModeDisableTransport),
                   NCCLSHIM_UNAVAILABLE);
  assert_non_null(strstr(ncclshim_last_error(),
                         "ncclConfig_t field nvlsHostMode needs NCCL >= 2.32.3; loaded 2.30.7"));
  assert_int_equal(config.nvlsHostMode, INT_MIN);
  static const ncclshim_config_field added[] = {
      NCCLSHIM_CONFIG_LAUNCH_ORDER_IMPLICIT, NCCLSHIM_CONFIG_NUM_RMA_SIG,
      NCCLSHIM_CONFIG_RMA_EAGER_INIT, NCCLSHIM_CONFIG_HOST_CFT_MODE,
      NCCLSHIM_CONFIG_NVLS_HOST_MODE};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(ncclshim_nccl_config_set_int(new_nccl, &config, sizeof(config), added[i], i),
                     NCCLSHIM_OK);
    /* A 96-byte ncclConfig_t (a 2.30 nccl.h) ends before them. */
    assert_int_equal(ncclshim_nccl_config_check(new_nccl, 96, added[i]), NCCLSHIM_UNAVAILABLE);
    assert_non_null(strstr(ncclshim_last_error(), "lies past the end of this ncclConfig_t (96"));
  }
  assert_int_equal(config.launchOrderImplicit, 0);
  assert_int_equal(config.hostCftMode, 3);
  assert_int_equal(config.nvlsHostMode, 4);
  assert_string_equal(ncclshim_config_field_name(NCCLSHIM_CONFIG_HOST_CFT_MODE), "hostCftMode");
  ncclshim_nccl_close(old_nccl);
  ncclshim_nccl_close(new_nccl);
}

/* ---- ncclCollConfig_t ------------------------------------------------------------------ */

static void test_coll_init_respects_size(void **state) {
  (void)state;
  static const size_t sizes[] = {16, 24, 40, 64, 72, 100};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    _Alignas(max_align_t) unsigned char buf[128];
    memset(buf, 0xab, sizeof(buf));
    assert_int_equal(ncclshim_coll_config_init(buf, sizes[i]), NCCLSHIM_OK);
    for (size_t b = sizes[i]; b < sizeof(buf); b++) assert_int_equal(buf[b], 0xab);
    ncclCollConfig_t seen;
    memcpy(&seen, buf, sizeof(seen));
    assert_int_equal(seen.size, sizes[i] < 72 ? sizes[i] : 72);
    assert_int_equal(seen.magic, 0xcafebeef);
    assert_int_equal(seen.version, 23203);
    if (sizes[i] >= 72) {
      assert_null(seen.ext);
      assert_int_equal(seen.minCTAs, INT_MIN);
      assert_null(seen.algSelection);
      assert_int_equal(seen.forceAlgSelection, 1);
      assert_int_equal(seen.CTAPolicy, INT_MIN);
      assert_int_equal(seen.userProfilerTag, 0);
      assert_null(seen.launchCompletionEvent);
    }
  }
  char small[12];
  assert_int_equal(ncclshim_coll_config_init(small, sizeof(small)), NCCLSHIM_INVALID_ARGUMENT);
  assert_non_null(strstr(ncclshim_last_error(), "ncclCollConfig_t: too small"));
  assert_int_equal(ncclshim_coll_config_init(NULL, 72), NCCLSHIM_INVALID_ARGUMENT);
}

static void test_coll_fields(void **state) {
  (void)state;
  ncclshim_nccl *old_nccl = open_fake("2.30.7"), *new_nccl = open_fake("2.32.3");
  ncclCollConfig_t config;
  memset(&config, 0, sizeof(config));
  assert_int_equal(ncclshim_coll_config_set_int(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_MAX_CTAS, 4),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_non_null(strstr(ncclshim_last_error(), "use ncclshim_coll_config_init"));
  NCCLSHIM_COLL_CONFIG_INIT(&config);
  /* An NCCL without the ...Config collectives would ignore every field. */
  assert_int_equal(ncclshim_coll_config_set_str(old_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_ALG_SELECTION, "ring"),
                   NCCLSHIM_UNAVAILABLE);
  assert_non_null(
      strstr(ncclshim_last_error(),
             "ncclCollConfig_t field algSelection needs NCCL >= 2.32.3; loaded 2.30.7"));
  assert_null(config.algSelection);
  int event;
  assert_int_equal(ncclshim_coll_config_set_str(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_ALG_SELECTION, "ring"),
                   NCCLSHIM_OK);
  assert_int_equal(ncclshim_coll_config_set_int(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_MAX_CTAS, 4),
                   NCCLSHIM_OK);
  assert_int_equal(ncclshim_coll_config_set_u64(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_USER_PROFILER_TAG,
                                                UINT64_C(0x1234567890abcdef)),
                   NCCLSHIM_OK);
  assert_int_equal(
      ncclshim_coll_config_set_ptr(new_nccl, &config, sizeof(config),
                                   NCCLSHIM_COLL_CONFIG_LAUNCH_COMPLETION_EVENT, &event),
      NCCLSHIM_OK);
  assert_string_equal(config.algSelection, "ring");
  assert_int_equal(config.maxCTAs, 4);
  assert_int_equal(config.userProfilerTag, UINT64_C(0x1234567890abcdef));
  assert_ptr_equal(config.launchCompletionEvent, (void *)&event);
  /* The wrong kind, an unknown field, a struct too short for the field. */
  assert_int_equal(ncclshim_coll_config_set_int(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_USER_PROFILER_TAG, 1),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_non_null(
      strstr(ncclshim_last_error(), "ncclCollConfig_t field userProfilerTag holds a uint64_t"));
  assert_int_equal(ncclshim_coll_config_set_ptr(new_nccl, &config, sizeof(config),
                                                NCCLSHIM_COLL_CONFIG_ALG_SELECTION, &event),
                   NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(
      ncclshim_coll_config_check(new_nccl, sizeof(config), NCCLSHIM_COLL_CONFIG_FIELD_COUNT),
      NCCLSHIM_INVALID_ARGUMENT);
  assert_int_equal(
      ncclshim_coll_config_check(new_nccl, 64, NCCLSHIM_COLL_CONFIG_LAUNCH_COMPLETION_EVENT),
      NCCLSHIM_UNAVAILABLE);
  assert_int_equal(ncclshim_coll_config_check(NULL, 72, NCCLSHIM_COLL_CONFIG_MIN_CTAS),
                   NCCLSHIM_UNAVAILABLE);
  assert_string_equal(ncclshim_coll_config_field_name(NCCLSHIM_COLL_CONFIG_CTA_POLICY),
                      "CTAPolicy");
  assert_null(ncclshim_coll_config_field_name(NCCLSHIM_COLL_CONFIG_FIELD_COUNT));
  ncclshim_nccl_close(old_nccl);
  ncclshim_nccl_close(new_nccl);
}

/* Through the table: the 2.32.3 fake receives the struct as made (size, magic, version,
 * fields); the 2.30.7 fake's table answers with the "needs NCCL >= 2.32.3" stub. */
#define FAKE_FN(path, name, type) ((type)(uintptr_t)fake_symbol((path), (name)))
static void *fake_symbol(const char *path, const char *name) {
  void *symbol = dlsym(dlopen(path, RTLD_NOW | RTLD_NOLOAD), name);
  assert_non_null(symbol);
  return symbol;
}

static void test_coll_config_arrives(void **state) {
  (void)state;
  ncclshim_nccl *nccl = open_fake("2.32.3");
  char *path = fake_path("2.32.3");
  FAKE_FN(path, "fake_nccl_reset", fake_nccl_void_fn)();
  FAKE_FN(path, "fake_nccl_set_live", fake_nccl_int_fn)(1);
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  ncclCollConfig_t config;
  NCCLSHIM_COLL_CONFIG_INIT(&config);
  ncclshim_coll_config_set_str(nccl, &config, sizeof(config), NCCLSHIM_COLL_CONFIG_ALG_SELECTION,
                               "allreduce=ring");
  ncclshim_coll_config_set_u64(nccl, &config, sizeof(config),
                               NCCLSHIM_COLL_CONFIG_USER_PROFILER_TAG, 77);
  assert_int_equal(t->ncclAllReduceConfig(NULL, NULL, 8, ncclFloat, ncclSum, NULL, NULL, &config),
                   ncclSuccess);
  const fake_nccl_coll_config *seen =
      FAKE_FN(path, "fake_nccl_last_coll_config", fake_nccl_coll_config_fn)();
  assert_int_equal(seen->given, 1);
  assert_int_equal(seen->size, 72);
  assert_int_equal(seen->magic, 0xcafebeef);
  assert_int_equal(seen->version, 23203);
  assert_string_equal(seen->alg, "allreduce=ring");
  assert_int_equal(seen->tag, 77);
  assert_int_equal(seen->max_ctas, INT_MIN);
  /* Each of the eight, its config last. */
  assert_int_equal(t->ncclReduceConfig(NULL, NULL, 1, ncclFloat, ncclSum, 0, NULL, NULL, &config),
                   ncclSuccess);
  assert_int_equal(seen->tag, 77);
  assert_int_equal(t->ncclAlltoAllConfig(NULL, NULL, 1, ncclFloat, NULL, NULL, NULL), ncclSuccess);
  assert_int_equal(seen->calls, 1);
  assert_int_equal(seen->given, 0);
  /* A struct not made by an initializer is refused, as NCCL refuses it. */
  ncclCollConfig_t raw;
  memset(&raw, 0, sizeof(raw));
  assert_int_equal(t->ncclGatherConfig(NULL, NULL, 1, ncclFloat, 0, NULL, NULL, &raw),
                   ncclInvalidArgument);
  ncclEncryptionConfig_t encryption = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  encryption.mode = NCCL_ENCRYPTION_MODE_PSK;
  encryption.psk = "secret";
  assert_int_equal(t->ncclSetEncryption(&encryption), ncclSuccess);
  const fake_nccl_encryption *enc =
      FAKE_FN(path, "fake_nccl_last_encryption", fake_nccl_encryption_fn)();
  assert_int_equal(enc->size, 32);
  assert_int_equal(enc->magic, 0xcafebeef);
  assert_int_equal(enc->mode, NCCL_ENCRYPTION_MODE_PSK);
  assert_string_equal(enc->psk, "secret");
  FAKE_FN(path, "fake_nccl_reset", fake_nccl_void_fn)();
  ncclshim_nccl_close(nccl);

  ncclshim_nccl *old_nccl = open_fake("2.30.7");
  t = ncclshim_nccl_functions(old_nccl);
  assert_int_equal(t->ncclAllReduceConfig(NULL, NULL, 8, ncclFloat, ncclSum, NULL, NULL, &config),
                   ncclInvalidArgument);
  assert_non_null(strstr(ncclshim_last_error(), "ncclAllReduceConfig needs NCCL >= 2.32.3"));
  assert_int_equal(t->ncclSetEncryption(&encryption), ncclInvalidArgument);
  assert_non_null(strstr(ncclshim_last_error(), "ncclSetEncryption needs NCCL >= 2.32.3"));
  ncclshim_nccl_close(old_nccl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_respects_size),
      cmocka_unit_test(test_init_refuses_bad_input),
      cmocka_unit_test(test_fields_honoured_by_version),
      cmocka_unit_test(test_set_fields),
      cmocka_unit_test(test_fields_of_2_32),
      cmocka_unit_test(test_coll_init_respects_size),
      cmocka_unit_test(test_coll_fields),
      cmocka_unit_test(test_coll_config_arrives),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
