/* The ld.so cache (/etc/ld.so.cache, written by ldconfig): every file registered under a
 * SONAME, not only the first, so that a search can go on past one it refuses. */
#ifndef NCCLSHIM_LOADER_LD_CACHE_H
#define NCCLSHIM_LOADER_LD_CACHE_H

/* The absolute paths registered under `soname` in the cache file `cache_path`, in the cache's
 * order (the order ld.so prefers them), each once: a malloc'd NULL-terminated array of malloc'd
 * strings. An absent, unreadable or malformed cache gives an empty array; NULL only when out of
 * memory. Reads the glibc format of 2.32 and later and the older combined format. */
char **ncshl_ld_cache_lookup(const char *cache_path, const char *soname);

#endif
