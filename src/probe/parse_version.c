#include "parse_version.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

int probe_parse_library_name(const char *path) {
  static const char prefix[] = "libnccl.so.";
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strncmp(base, prefix, sizeof(prefix) - 1) != 0) return 0;
  const char *v = base + sizeof(prefix) - 1, *first = strchr(v, '.');
  if (first == NULL || strchr(first + 1, '.') == NULL) return 0; /* "2.28": no patch */
  int packed = probe_parse_version(v);
  return packed / 10000 > 9 ? 0 : packed;
}

int probe_parse_cuda_tag(const char *tag) {
  static const char prefix[] = "+cuda";
  if (strncmp(tag, prefix, sizeof(prefix) - 1) != 0) return 0;
  const char *s = tag + sizeof(prefix) - 1;
  int major = 0, minor = 0, digits = 0;
  for (; *s >= '0' && *s <= '9' && digits < 3; s++, digits++) major = major * 10 + (*s - '0');
  if (digits == 0 || *s++ != '.') return 0;
  for (digits = 0; *s >= '0' && *s <= '9' && digits < 2; s++, digits++)
    minor = minor * 10 + (*s - '0');
  if (digits == 0 || major == 0) return 0;
  return major * 1000 + minor * 10;
}

int probe_parse_glibc(const char *name) {
  unsigned major = 0, minor = 0;
  if (strncmp(name, "GLIBC_", 6) != 0 || sscanf(name + 6, "%u.%u", &major, &minor) < 1) return 0;
  return major > 99 || minor > 999 ? 0 : (int)(major * 1000 + minor);
}
