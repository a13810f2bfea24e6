/* Whether loading a library would wait forever on a file that blocks (blocking.h) anywhere the
 * dynamic loader looks: for a bare name, its whole search (the directories ncshl_search_blocks
 * covers and the ld.so cache's files for the name); for a file opened by path, nothing of the
 * search; then, for the file it would load, each DT_NEEDED dependency not already mapped,
 * looked for as the loader looks (the needing file's RPATH when it has no RUNPATH, the
 * program's search, its RUNPATH, $ORIGIN being its directory, then the cache), and the file
 * found followed in turn, up to 8 levels. Reads files as bytes (elf_file.h), never loads. */
#ifndef NCCLSHIM_LOADER_LOAD_BLOCKS_H
#define NCCLSHIM_LOADER_LOAD_BLOCKS_H

#include <stddef.h>

/* 1 when dlopen(`name`) (a SONAME, no '/') would open a blocking file, its path in `file`.
 * `ld_cache` is the cache file the loader reads (NULL: /etc/ld.so.cache). */
int ncshl_name_load_blocks(const char *name, const char *ld_cache, char *file, size_t size);

/* The same for dlopen of the file at `path`: its dependencies. */
int ncshl_file_load_blocks(const char *path, const char *ld_cache, char *file, size_t size);

#endif
