#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loader/outcome.h"
#include "fuzz.h"

char *fuzz_string(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL) abort();
  memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static int file = -1;
  static char path[64];
  if (file < 0) {
    file = memfd_create(name, MFD_CLOEXEC);
    FUZZ_CHECK(file >= 0, "memfd_create");
    snprintf(path, sizeof(path), "/proc/self/fd/%d", file);
  }
  FUZZ_CHECK(ftruncate(file, 0) == 0 && (size == 0 || pwrite(file, data, size, 0) == (ssize_t)size),
             "memfd write");
  return path;
}

void fuzz_check_outcome(int status, const char *reason, size_t size) {
  FUZZ_CHECK(status == NCSHL_OK || status == NCSHL_UNLOADABLE, "status %d", status);
  if (status != NCSHL_OK) { /* the reason is written on refusal only */
    FUZZ_CHECK(memchr(reason, '\0', size) != NULL, "reason not terminated");
    FUZZ_CHECK(reason[0] != '\0', "a refusal without a reason");
  }
}
