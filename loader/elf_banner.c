#include "elf_banner.h"

#include <elf.h>
#include <string.h>

/* The decimal number at v, at most 99, into *out: the text past it, or NULL when none is there. */
static const char *small_number(const char *v, const char *end, int *out) {
  const char *start = v;
  int n = 0;
  for (; v < end && *v >= '0' && *v <= '9'; v++)
    if ((n = n * 10 + (*v - '0')) > 99) return NULL;
  *out = n;
  return v > start ? v : NULL;
}

/* The dot between two numbers: the text past it, or NULL. */
static const char *dot(const char *v, const char *end) {
  return v != NULL && v < end && *v == '.' ? v + 1 : NULL;
}

/* The first banner with a "+tag" after its version, or else the first without one: a library
 * can carry the bare version in another message before the banner itself (NCCL 2.28.3 as
 * Ubuntu ships it has "NCCL version 2.28.3\n..." ahead of "NCCL version 2.28.3+cuda13.0"). */
static int scan(const char *data, size_t length, const char *key, char *tag, size_t size) {
  size_t key_length = strlen(key);
  const char *end = data + length;
  int bare = 0;
  for (const char *p = data; (p = memmem(p, (size_t)(end - p), key, key_length)) != NULL;) {
    p += key_length;
    int major, minor, patch;
    const char *v = small_number(p, end, &major);
    if ((v = dot(v, end)) == NULL || (v = small_number(v, end, &minor)) == NULL ||
        (v = dot(v, end)) == NULL || (v = small_number(v, end, &patch)) == NULL ||
        major + minor + patch == 0) /* 0.0.0 would read as "none" */
      continue;
    int packed = major * 10000 + minor * 100 + patch;
    if (v >= end || *v != '+') {
      if (bare == 0) bare = packed;
      continue;
    }
    size_t n = 0;
    while (v + n < end && n + 1 < size && v[n] > ' ' && v[n] < 127) n++;
    memcpy(tag, v, n);
    tag[n] = '\0';
    return packed;
  }
  return bare;
}

int ncshl_elf_banner(const ncshl_elf_file *f, const char *key, char *tag, size_t size) {
  tag[0] = '\0';
  for (unsigned i = 0; i < f->shnum; i++) {
    ElfW(Shdr) s;
    ncshl_elf_section(f, i, &s);
    const char *name = ncshl_elf_section_name(f, &s);
    if (name != NULL && strcmp(name, ".rodata") == 0 && s.sh_type == SHT_PROGBITS &&
        ncshl_elf_inside(f, s.sh_offset, s.sh_size))
      return scan((const char *)f->bytes + s.sh_offset, (size_t)s.sh_size, key, tag, size);
  }
  return scan((const char *)f->bytes, f->size, key, tag, size);
}
