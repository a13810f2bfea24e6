/* loader/elf_banner.c: a version banner found in a file's bytes ("<key>X.Y.Z+tag"), the first
 * real one after look-alikes (a format string, a number too large, a cut-off version), the tag
 * bounded by the caller's buffer and by the data's end; and in a real library's .rodata. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loader/elf_banner.h"

/* The scan of `length` bytes as a file without a section table (scanned whole). */
static int banner_of(const char *data, size_t length, char *tag, size_t size) {
  ncshl_elf_file f = {.bytes = (const unsigned char *)data, .size = length};
  return ncshl_elf_banner(&f, "NCCL version ", tag, size);
}

#define BANNER(text, tag) banner_of((text), sizeof(text) - 1, (tag), sizeof(tag))

/* The scan of a whole literal `text` (without the NUL it ends with) must give `version` and
 * `tag`, written over the junk a tag buffer holds first. */
static void expect_banner(const char *text, size_t length, int version, const char *tag) {
  char found[32] = "junk";
  assert_int_equal(banner_of(text, length, found, sizeof(found)), version);
  assert_string_equal(found, tag);
}
#define EXPECT_BANNER(text, version, tag) expect_banner((text), sizeof(text) - 1, (version), (tag))

static void test_look_alikes_skipped(void **state) {
  (void)state;
  EXPECT_BANNER(
      "NCCL version %s\n\0NCCL version 2.100.1\0NCCL version 3.1\0"
      "NCCL version .1.2\0NCCL version 0.0.0+x\0NCCL version 2.28.9+cuda13.0\0",
      22809, "+cuda13.0");
}

static void test_tag_only_after_plus(void **state) {
  (void)state;
  EXPECT_BANNER("NCCL version 2.29.7\n", 22907, "");
  EXPECT_BANNER("NCCL version 2.29.7a0+cuda13.0", 22907, ""); /* a suffix: no tag */
  EXPECT_BANNER("NCCL version 2.28.3+cuda12.9 more", 22803, "+cuda12.9");
}

/* Ubuntu's NCCL 2.28.3 holds the bare version in a message ahead of the banner itself. */
static void test_tagged_banner_after_a_bare_version(void **state) {
  (void)state;
  EXPECT_BANNER(
      "NCCL version 2.28.3\nxx\0NCCL version mismatch\0"
      "NCCL version 2.28.3+cuda13.0\0%s",
      22803, "+cuda13.0");
}

static void test_bounded(void **state) {
  (void)state;
  char small[8];
  assert_int_equal(BANNER("NCCL version 2.28.9+cuda13.0", small), 22809);
  assert_string_equal(small, "+cuda13");
  char tag[32];
  /* The data ends inside the tag, inside the version, inside the key: no NUL to stop at. */
  assert_int_equal(banner_of("NCCL version 2.18.5+cu", 22, tag, sizeof(tag)), 21805);
  assert_string_equal(tag, "+cu");
  assert_int_equal(banner_of("NCCL version 2.18.5", 17, tag, sizeof(tag)), 0);
  assert_string_equal(tag, "");
  assert_int_equal(banner_of("NCCL version 2", 8, tag, sizeof(tag)), 0);
  assert_int_equal(banner_of("", 0, tag, sizeof(tag)), 0);
}

/* A real library: the banner is found in its .rodata through the section table. */
static void test_rodata_of_a_library(void **state) {
  (void)state;
  const char *path = getenv("DUMMY_LIB");
  assert_non_null(path);
  ncshl_elf_file f;
  char reason[256], tag[32];
  assert_int_equal(ncshl_elf_open(path, &f, reason, sizeof(reason)), NCSHL_OK);
  assert_true(f.shnum > 0);
  assert_int_equal(ncshl_elf_banner(&f, "ncshl dummy ", tag, sizeof(tag)), 10203);
  assert_string_equal(tag, "+test");
  assert_int_equal(ncshl_elf_banner(&f, "NCCL version ", tag, sizeof(tag)), 0);
  ncshl_elf_close(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_look_alikes_skipped),
      cmocka_unit_test(test_tag_only_after_plus),
      cmocka_unit_test(test_tagged_banner_after_a_bare_version),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_rodata_of_a_library),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
