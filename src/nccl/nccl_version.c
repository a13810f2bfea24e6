#include <stdio.h>

#include "ncclshim/ncclshim.h"

int ncclshim_decode_version(int code, int *major, int *minor, int *patch) {
  int x, y, z;
  if (code >= 10000) { /* 2.9 and later: X*10000 + Y*100 + Z */
    x = code / 10000;
    y = (code / 100) % 100;
    z = code % 100;
  } else if (code >= 1000) { /* up to 2.8: X*1000 + Y*100 + Z */
    x = code / 1000;
    y = (code / 100) % 10;
    z = code % 100;
  } else {
    return 0; /* zero, negative, or no major version */
  }
  if (major) *major = x;
  if (minor) *minor = y;
  if (patch) *patch = z;
  return x * 10000 + y * 100 + z;
}

const char *ncclshim_format_version(int packed, char *buf, size_t size) {
  if (size == 0) return buf;
  if (packed <= 0)
    snprintf(buf, size, "none");
  else
    snprintf(buf, size, "%d.%d.%d", packed / 10000, (packed / 100) % 100, packed % 100);
  return buf;
}

const char *ncclshim_library_version(void) { return NCCLSHIM_VERSION; }
