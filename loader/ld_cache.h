/* The ld.so cache (/etc/ld.so.cache, written by ldconfig): every file registered under a
 * SONAME, not only the first, so that a search can go on past one it refuses. */
#ifndef NCCLSHIM_LOADER_LD_CACHE_H
#define NCCLSHIM_LOADER_LD_CACHE_H

#include "list.h"

/* Append to `out` the absolute paths registered under `soname` in the cache file
 * `cache_path`, in the cache's order (the order ld.so prefers them), each once, with the why
 * "registered in <cache_path>". An absent, unreadable or malformed cache adds nothing. 0, or
 * -1 when out of memory. Reads the glibc format of 2.32 and later and the older combined
 * format. */
int ncshl_ld_cache_lookup(const char *cache_path, const char *soname, ncshl_list *out);

/* The same in steps, for a search that looks up many names: the cache file mapped once. */
typedef struct ncshl_ld_cache {
  const unsigned char *data; /* NULL when absent, unreadable or too large */
  size_t size;
  char *why;
  int out_of_memory;
} ncshl_ld_cache;
void ncshl_ld_cache_open(const char *cache_path, ncshl_ld_cache *cache);
int ncshl_ld_cache_find(const ncshl_ld_cache *cache, const char *soname, ncshl_list *out);
void ncshl_ld_cache_close(ncshl_ld_cache *cache);

#endif
