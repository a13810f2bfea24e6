/* The cache's format is glibc's (elf/cache.c and sysdeps/generic/dl-cache.h): a header, an
 * array of entries, and the strings the entries point into. */
#include "ld_cache.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define NEW_MAGIC "glibc-ld.so.cache1.1" /* magic and version, 20 bytes */
#define OLD_MAGIC "ld.so-1.7.0"          /* the pre-2.32 format, followed by the new one */
enum {
  NEW_HEADER = 48, /* magic+version, nlibs, len_strings, flags, padding, extension, unused */
  NEW_ENTRY = 24,  /* flags, key, value, osversion, hwcap */
  OLD_HEADER = 16, /* magic, padding, nlibs */
  OLD_ENTRY = 12,  /* flags, key, value */
  MAX_CACHE = 64 << 20
};

static uint32_t word(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

/* Where the new-format header lies, or SIZE_MAX. */
static size_t new_header_offset(const unsigned char *data, size_t size) {
  if (size >= NEW_HEADER && memcmp(data, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) == 0) return 0;
  if (size < OLD_HEADER || memcmp(data, OLD_MAGIC, sizeof(OLD_MAGIC) - 1) != 0) return SIZE_MAX;
  uint64_t offset = OLD_HEADER + (uint64_t)word(data + 12) * OLD_ENTRY;
  offset = (offset + 7) & ~(uint64_t)7; /* aligned for the new header's 64-bit fields */
  if (offset > size || size - offset < NEW_HEADER ||
      memcmp(data + offset, NEW_MAGIC, sizeof(NEW_MAGIC) - 1) != 0)
    return SIZE_MAX;
  return (size_t)offset;
}

/* A NUL-terminated string at `offset` of the `size` bytes from `base`, or NULL. */
static const char *string_at(const unsigned char *base, size_t size, uint32_t offset) {
  if (offset >= size || memchr(base + offset, '\0', size - offset) == NULL) return NULL;
  return (const char *)base + offset;
}

static void collect(const unsigned char *data, size_t size, const char *soname, const char *why,
                    ncshl_list *list) {
  size_t at = new_header_offset(data, size);
  if (at == SIZE_MAX) return;
  /* Strings are addressed from the start of the new header. */
  const unsigned char *base = data + at;
  size_t span = size - at;
  uint32_t nlibs = word(base + 20);
  if (nlibs > (span - NEW_HEADER) / NEW_ENTRY) return;
  const size_t length = strlen(soname) + 1; /* the key compared with its NUL, inside the file */
  for (uint32_t i = 0; i < nlibs; i++) {
    const unsigned char *entry = base + NEW_HEADER + (size_t)i * NEW_ENTRY;
    uint32_t key = word(entry + 4);
    if (key >= span || length > span - key || memcmp(base + key, soname, length) != 0) continue;
    const char *value = string_at(base, span, word(entry + 8));
    if (value && value[0] == '/') ncshl_list_add(list, value, why);
  }
}

void ncshl_ld_cache_open(const char *cache_path, ncshl_ld_cache *cache) {
  *cache = (ncshl_ld_cache){0};
  int fd = open(cache_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  size_t why_size = strlen(cache_path) + 32;
  cache->why = malloc(why_size);
  struct stat st;
  if (cache->why != NULL && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      st.st_size <= MAX_CACHE) {
    snprintf(cache->why, why_size, "registered in %s", cache_path);
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      cache->data = data;
      cache->size = (size_t)st.st_size;
    }
  }
  close(fd);
  cache->out_of_memory = cache->why == NULL;
}

int ncshl_ld_cache_find(const ncshl_ld_cache *cache, const char *soname, ncshl_list *out) {
  if (cache->data != NULL) collect(cache->data, cache->size, soname, cache->why, out);
  if (cache->out_of_memory) out->out_of_memory = 1;
  return out->out_of_memory ? -1 : 0;
}

void ncshl_ld_cache_close(ncshl_ld_cache *cache) {
  if (cache->data != NULL) munmap((void *)cache->data, cache->size);
  free(cache->why);
  *cache = (ncshl_ld_cache){0};
}

int ncshl_ld_cache_lookup(const char *cache_path, const char *soname, ncshl_list *out) {
  ncshl_ld_cache cache;
  ncshl_ld_cache_open(cache_path, &cache);
  int result = ncshl_ld_cache_find(&cache, soname, out);
  ncshl_ld_cache_close(&cache);
  return result;
}
