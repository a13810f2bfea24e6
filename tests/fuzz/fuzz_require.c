/* ncclshim-probe's --require values: probe_parse_version and the capability names. A version is
 * 0 (refused) or a packed version in range that formats back to text parsing to itself. The
 * doctor's other version texts (parse_version.h) on the same bytes: 0 or a value in range. */
#include <string.h>

#include "src/probe/parse_version.h"
#include "fuzz.h"
#include "ncclshim/ncclshim.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_string(data, size);
  int packed = probe_parse_version(text);
  if (packed != 0) {
    /* Only "X.Y" or "X.Y.Z" in decimal digits is a version (no sign, space or other byte). */
    size_t digits = strspn(text, "0123456789"), dots = 0;
    for (const char *p = text; *p; p++) dots += *p == '.';
    FUZZ_CHECK(strspn(text, "0123456789.") == strlen(text) && digits > 0 &&
                   (dots == 1 || dots == 2) && strstr(text, "..") == NULL &&
                   text[strlen(text) - 1] != '.',
               "\"%s\" is not X.Y[.Z] but gave %d", text, packed);
    FUZZ_CHECK(packed >= 10000, "\"%s\" gave %d", text, packed);
    int major = packed / 10000, minor = packed / 100 % 100, patch = packed % 100;
    char again[32];
    snprintf(again, sizeof(again), "%d.%d.%d", major, minor, patch);
    FUZZ_CHECK(probe_parse_version(again) == packed, "\"%s\" -> %d -> \"%s\"", text, packed, again);
  }
  int library = probe_parse_library_name(text), cuda = probe_parse_cuda_tag(text),
      glibc = probe_parse_glibc(text);
  FUZZ_CHECK(library == 0 || (library >= 10000 && library < 100000), "library %d", library);
  FUZZ_CHECK(cuda == 0 || (cuda >= 1000 && cuda <= 999990 && cuda % 10 == 0), "cuda %d", cuda);
  FUZZ_CHECK(glibc >= 0 && glibc <= 99999, "glibc %d", glibc);
  int capability = ncclshim_capability_from_name(text);
  FUZZ_CHECK(capability >= -1 && capability < NCCLSHIM_CAPABILITY_COUNT, "capability %d",
             capability);
  if (capability >= 0)
    FUZZ_CHECK(strcmp(ncclshim_capability_name(capability), text) == 0, "name differs");
  free(text);
  return 0;
}
