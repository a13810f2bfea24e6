/* LD_LIBRARY_PATH, read as ld.so reads it (secure_getenv, split at ':' or ';'). */
#ifndef NCCLSHIM_LOADER_LIBRARY_PATH_H
#define NCCLSHIM_LOADER_LIBRARY_PATH_H

#include <stddef.h>

#include "list.h"

/* The absolute entries of LD_LIBRARY_PATH. Empty, relative and $ORIGIN-style entries are left
 * to the search's SYSTEM step, where ld.so reads them. */
void ncshl_library_path_places(ncshl_list *dirs);

#endif
