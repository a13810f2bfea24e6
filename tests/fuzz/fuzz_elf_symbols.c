/* The export reader on arbitrary bytes (written to a memfd, read through its path): every
 * answer is OK, ABSENT or LOAD_FAILED with a reason; every name it hands out is a terminated
 * string inside the file; nothing may read outside the file. The version banner scan
 * (elf_banner.c) on the same file: a packed version and a terminated tag, empty or "+...". */
#include <string.h>

#include "loader/elf_banner.h"
#include "loader/elf_file.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static int each(void *context, const char *name, int is_function) {
  FUZZ_CHECK(is_function == 0 || is_function == 1, "is_function %d", is_function);
  size_t *count = context;
  FUZZ_CHECK(strlen(name) < (1u << 26), "a name of %zu bytes", strlen(name));
  return ++*count > 100000; /* stop: enough */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *file_path = fuzz_file("ncclshim-fuzz-elf-symbols", data, size);
  char reason[256];
  memset(reason, 'x', sizeof(reason));
  size_t count = 0;
  ncshl_outcome status = ncshl_elf_exports(file_path, each, &count, reason, sizeof(reason));
  fuzz_check_outcome(status, reason, sizeof(reason));
  ncshl_elf_file f;
  if (ncshl_elf_open(file_path, &f, reason, sizeof(reason)) == NCSHL_OK) {
    char tag[8];
    memset(tag, 'x', sizeof(tag));
    int version = ncshl_elf_banner(&f, "NCCL version ", tag, sizeof(tag));
    FUZZ_CHECK(version >= 0 && version <= 999999, "version %d", version);
    FUZZ_CHECK(memchr(tag, '\0', sizeof(tag)) != NULL, "tag not terminated");
    FUZZ_CHECK(tag[0] == '\0' || (version > 0 && tag[0] == '+'), "tag %s", tag);
  }
  ncshl_elf_close(&f);
  return 0;
}
