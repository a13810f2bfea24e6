/* An ld.so audit module for the search tests: it hides every libnccl* and libcuda* that the
 * dynamic loader would find in its default directories or its cache, so that a test can make
 * "no NCCL" and "no driver" real even on a machine that has them installed system-wide.
 * LD_LIBRARY_PATH, RUNPATH and explicit paths are left alone. */
#include <link.h>
#include <stdint.h>
#include <string.h>

unsigned int la_version(unsigned int version) {
  (void)version;
  return LAV_CURRENT;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag) {
  (void)cookie;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  int hidden = strncmp(base, "libnccl", 7) == 0 || strncmp(base, "libcuda", 7) == 0;
  if (hidden && (flag == LA_SER_DEFAULT || flag == LA_SER_CONFIG)) return NULL;
  return (char *)name;
}
