#include "parse_version.h"

#include <limits.h>
#include <stddef.h>

/* One field of a version: decimal digits only, at most `max`. The end, or NULL. */
static const char *version_field(const char *s, int max, int *out) {
  if (*s < '0' || *s > '9') return NULL;
  int value = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    if ((value = value * 10 + (*s - '0')) > max) return NULL;
  *out = value;
  return s;
}

/* The major version is bounded so that the packed value fits an int (sscanf's %d had no
 * bound: "300000.0" overflowed). */
int probe_parse_version(const char *text) {
  int major, minor, patch = 0;
  const char *s = version_field(text, (INT_MAX - 9999) / 10000, &major);
  if (s == NULL || *s++ != '.' || (s = version_field(s, 99, &minor)) == NULL) return 0;
  if (*s == '.' && (s = version_field(s + 1, 99, &patch)) == NULL) return 0;
  if (*s != '\0' || major < 1) return 0;
  return major * 10000 + minor * 100 + patch;
}
