/* LD_LIBRARY_PATH, read as ld.so reads it (secure_getenv, split at ':' or ';'). */
#ifndef NCCLSHIM_LOADER_LIBRARY_PATH_H
#define NCCLSHIM_LOADER_LIBRARY_PATH_H

#include <stddef.h>

#include "list.h"

/* The absolute entries of LD_LIBRARY_PATH. Empty, relative and $ORIGIN-style entries are left
 * to the search's SYSTEM step, where ld.so reads them. */
void ncshl_library_path_places(ncshl_list *dirs);

/* 1 when a directory of LD_LIBRARY_PATH (relative and empty entries included, as ld.so reads
 * them) holds something called `soname` that is neither a file nor a directory, its path in
 * `file`: ld.so's open of a FIFO or a terminal waits forever, so neither the search nor the
 * trace hands the name to it. */
int ncshl_blocking_file(const char *soname, char *file, size_t size);

#endif
