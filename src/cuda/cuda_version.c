/* CUDA's version numbers (1000 * major + 10 * minor) as text. */
#include <stdio.h>

#include "ncclshim/cuda.h"

const char *ncclshim_cuda_format_version(int version, char *buf, size_t size) {
  if (size == 0) return buf;
  if (version <= 0)
    snprintf(buf, size, "none");
  else
    snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
  return buf;
}
