/* Regression tests for what the fuzz harnesses and the hostile tests found (each also stays
 * in tests/fuzz/corpus/<harness>/, which every build replays):
 *  - the ELF check read before its buffer when a program-header offset plus the table size
 *    wrapped around 2^64 (a caller-given file size that large let it through);
 *  - the probe's JSON strings let lead bytes 0xf5..0xff through as if UTF-8;
 *  - ncclshim-probe --require with a huge major version overflowed an int (undefined; in
 *    practice "--require 300000.0" was reported as met by NCCL 2.28.9). */
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loader/elf_check.h"
#include "src/probe/json.h"
#include "hardening.h"

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#endif

/* A native ELF header whose one program header lies at `phoff`. */
static void header(unsigned char *bytes, uint64_t phoff) {
  ElfW(Ehdr) eh;
  memset(&eh, 0, sizeof(eh));
  memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = NATIVE_MACHINE;
  eh.e_phoff = phoff;
  eh.e_phentsize = sizeof(ElfW(Phdr));
  eh.e_phnum = 1;
  memcpy(bytes, &eh, sizeof(eh));
}

static void test_elf_offset_wraps(void **state) {
  (void)state;
  unsigned char *bytes = malloc(sizeof(ElfW(Ehdr)));
  char reason[256] = "";
  /* phoff + 56 wraps to 0: before the fix this read 56 bytes before `bytes`. */
  header(bytes, UINT64_MAX - sizeof(ElfW(Phdr)) + 1);
  assert_int_equal(
      ncshl_elf_check_bytes(bytes, sizeof(ElfW(Ehdr)), UINT64_MAX, reason, sizeof(reason)),
      NCSHL_UNLOADABLE);
  assert_non_null(strstr(reason, "program header"));
  /* And wrapping past the end of the buffer instead. */
  header(bytes, UINT64_MAX - 8);
  assert_int_equal(
      ncshl_elf_check_bytes(bytes, sizeof(ElfW(Ehdr)), UINT64_MAX, reason, sizeof(reason)),
      NCSHL_UNLOADABLE);
  assert_non_null(strstr(reason, "program header"));
  /* A table in range of a claimed size but past the bytes given: truncated, as before. */
  header(bytes, 4096);
  assert_int_equal(
      ncshl_elf_check_bytes(bytes, sizeof(ElfW(Ehdr)), 1 << 20, reason, sizeof(reason)),
      NCSHL_UNLOADABLE);
  assert_non_null(strstr(reason, "truncated: program headers lie past the 64 bytes given"));
  free(bytes);
}

static char *json(const char *text) {
  char *out = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&out, &size);
  json_string(f, text);
  fclose(f);
  return out;
}

static void test_json_lead_bytes(void **state) {
  (void)state;
  /* 0xf5..0xff never start UTF-8: each is replaced, and what follows it too (it is not a
   * continuation of anything). Before the fix "\xf8\x80\x80" went out as it was. */
  char *out = json("a\xf8\x80\x80z");
  assert_string_equal(out, "\"a\\ufffd\\ufffd\\ufffdz\"");
  free(out);
  out = json("\xff\xbf\xbf\xfe\x80\x80\xf5\x80\x80\x80");
  assert_string_equal(out,
                      "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
  free(out);
  /* Valid sequences of every length are kept. */
  out = json("\x41\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
  assert_string_equal(out, "\"\x41\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"");
  free(out);
}

static void test_require_huge_version(void **state) {
  (void)state;
  char why[512];
  if (!hs_helpers_run(getenv("HELPER"), why, sizeof(why))) {
    print_message("skipped: %s\n", why);
    skip();
  }
  const char *env[] = {NULL};
  const char *values[] = {"300000.0", "6609049.63", "2147483647.99.99", "21474.83.647"};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    const char *args[] = {"--no-devices", "--library", fake_path("2.28.9"),
                          "--require",    values[i],   NULL};
    scenario s;
    run_program(&s, getenv("PROBE"), args, env);
    if (s.exit_code != 2)
      fail_msg("--require %s: exit %d, expected 2 (not a version)", values[i], s.exit_code);
  }
  /* The largest that fits is a version, unmet (exit 1); an ordinary one is met (exit 0). */
  const char *big[] = {"--no-devices", "--library",    fake_path("2.28.9"),
                       "--require",    "214746.99.99", NULL};
  scenario s;
  run_program(&s, getenv("PROBE"), big, env);
  assert_int_equal(s.exit_code, 1);
  const char *met[] = {"--no-devices", "--library", fake_path("2.28.9"), "--require", "2.28", NULL};
  run_program(&s, getenv("PROBE"), met, env);
  assert_int_equal(s.exit_code, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elf_offset_wraps),
      cmocka_unit_test(test_json_lead_bytes),
      cmocka_unit_test(test_require_huge_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
