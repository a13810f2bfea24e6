/* ncclConfig_t from any nccl.h: filled within the caller's size, fields accepted only when
 * the loaded library honours them. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "ncclshim/ncclshim.h"
#include "../support.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init_respects_size),
      cmocka_unit_test(test_init_refuses_bad_input),
      cmocka_unit_test(test_fields_honoured_by_version),
      cmocka_unit_test(test_set_fields),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
