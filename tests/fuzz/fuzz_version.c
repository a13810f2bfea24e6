/* The version decoder and formatter on every int: decoding gives a packed version whose
 * parts are in range and that re-encodes the same, or 0; formatting into any buffer size
 * stays inside it and is NUL-terminated. */
#include <limits.h>
#include <string.h>

#include "fuzz.h"
#include "ncclshim/ncclshim.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static void format_checks(int value, size_t size) {
  char buf[24];
  memset(buf, 'x', sizeof(buf));
  const char *out = ncclshim_format_version(value, buf, size);
  FUZZ_CHECK(out == buf, "returned another buffer");
  if (size > 0) FUZZ_CHECK(memchr(buf, '\0', size) != NULL, "not terminated in %zu bytes", size);
  for (size_t i = size; i < sizeof(buf); i++) FUZZ_CHECK(buf[i] == 'x', "wrote past %zu", size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int code = 0;
  memcpy(&code, data, size < sizeof(code) ? size : sizeof(code));
  int major = -1, minor = -1, patch = -1;
  int packed = ncclshim_decode_version(code, &major, &minor, &patch);
  if (code < 1000) {
    FUZZ_CHECK(packed == 0, "code %d gave %d", code, packed);
  } else {
    FUZZ_CHECK(major >= 1 && minor >= 0 && minor <= 99 && patch >= 0 && patch <= 99,
               "code %d: %d.%d.%d", code, major, minor, patch);
    FUZZ_CHECK((long long)packed == major * 10000LL + minor * 100LL + patch, "code %d", code);
    if (code >= 10000) FUZZ_CHECK(packed == code, "code %d re-encoded as %d", code, packed);
    /* decoding is stable: the packed form decodes to itself */
    int again = ncclshim_decode_version(packed, NULL, NULL, NULL);
    FUZZ_CHECK(packed < 10000 || again == packed, "code %d: %d then %d", code, packed, again);
  }
  size_t buf_size = size > sizeof(code) ? data[sizeof(code)] % 24 : 16;
  format_checks(code, buf_size);
  format_checks(packed, buf_size);
  return 0;
}
