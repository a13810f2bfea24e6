/* The ELF pre-check on arbitrary bytes: (1) the bytes as a whole file, (2) the bytes as the
 * start of a larger file (its size taken from the first 8 bytes), (3) the bytes written to a
 * real file (a memfd) and checked through its path, which must agree with (1). Every answer
 * is OK or LOAD_FAILED with a reason; nothing may read outside the bytes given. */
#include <string.h>

#include "loader/elf_check.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static ncshl_outcome check(const uint8_t *data, size_t size, unsigned long long file_size) {
  char reason[256];
  memset(reason, 'x', sizeof(reason));
  ncshl_outcome status = ncshl_elf_check_bytes(data, size, file_size, reason, sizeof(reason));
  fuzz_check_outcome(status, reason, sizeof(reason));
  return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* (1) the whole file */
  ncshl_outcome whole = check(data, size, size);

  /* (2) a prefix: the file is `extra` bytes longer than what was read */
  if (size >= 8) {
    unsigned long long extra;
    memcpy(&extra, data, sizeof(extra));
    unsigned long long length = size - 8;
    unsigned long long file_size = extra > ~0ULL - length ? ~0ULL : length + extra;
    check(data + 8, size - 8, file_size);
  }

  /* (3) the same bytes as a file on disk */
  char reason[256];
  ncshl_outcome on_disk =
      ncshl_elf_check(fuzz_file("ncclshim-fuzz-elf", data, size), reason, sizeof(reason));
  FUZZ_CHECK(on_disk == whole, "the file check says %d (%s), the bytes check %d", on_disk, reason,
             whole);
  return 0;
}
