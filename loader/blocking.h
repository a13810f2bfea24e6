/* Files the dynamic loader would wait on forever: its open(2) of a FIFO waits for a writer,
 * and its read of a terminal for input, wherever in its search the file lies. The loader
 * opens each candidate path in turn, in every directory of its search and in each one's
 * glibc-hwcaps and legacy hardware subdirectories, so a blocking file anywhere there stops
 * the process. These checks open no such file for reading and never wait. */
#ifndef NCCLSHIM_LOADER_BLOCKING_H
#define NCCLSHIM_LOADER_BLOCKING_H

#include <stddef.h>

#include "list.h"

/* 1 when opening and reading `path` would wait: a FIFO, or a device with nothing to read (a
 * terminal). /dev/null and /dev/zero answer at once: 0, as for a file or a missing path. */
int ncshl_would_block(const char *path);

/* 1 when `dir`/`name` blocks, or the same name in a subdirectory the loader tries under a
 * directory of its search: each glibc-hwcaps/<level> (every one present, whether or not this
 * CPU reaches it), and up to four nested legacy hardware names (tls, the platform, x86_64,
 * haswell, ...; glibc before 2.37). The blocking path goes to `file`. */
int ncshl_dir_blocks(const char *dir, const char *name, char *file, size_t size);

/* The places under `dir` where the loader tries a name, for a search that tries many names in
 * the same directories: its glibc-hwcaps levels and legacy subdirectories present and `dir`
 * itself (none when `dir` is absent), found once and appended to `places`; then a name costs a
 * stat per place. 0, or -1 when out of memory and the list is short. */
int ncshl_dir_places(const char *dir, ncshl_list *places);

/* The directories of the dynamic loader's search for a dlopen by this program, as the loader
 * itself lists them (dlinfo RTLD_DI_SERINFO): the program's RPATH, LD_LIBRARY_PATH with its
 * $ORIGIN, $LIB and $PLATFORM expanded and relative entries kept (none in a secure process,
 * where the loader ignores it), its RUNPATH, the system directories; appended to `dirs`. */
void ncshl_search_dirs(ncshl_list *dirs);

/* 1 when the dynamic loader's search for the bare `name`, as a dlopen by this program would
 * run it, passes a blocking file: ncshl_dir_blocks over each of ncshl_search_dirs. The path
 * goes to `file`. The ld.so cache and the dependencies are the search's part (load_blocks.h). */
int ncshl_search_blocks(const char *name, char *file, size_t size);

#endif
