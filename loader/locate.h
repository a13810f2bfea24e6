/* Which file the dynamic loader would open for a name, found without opening anything: for
 * callers that must read a library NCCL or another program would dlopen, not load it; and
 * whether its search would block on one. */
#ifndef NCCLSHIM_LOADER_LOCATE_H
#define NCCLSHIM_LOADER_LOCATE_H

#include <stddef.h>

/* The real path of the file dlopen(name) would open, or NULL when none is found: a name with
 * '/' is that file; otherwise the absolute directories of LD_LIBRARY_PATH, then the first
 * file the ld.so cache `ld_cache` registers under the name (NULL skips it), then the system
 * directories. A RUNPATH of the calling object is not searched. malloc'd. */
char *ncshl_locate(const char *name, const char *ld_cache);

#endif
