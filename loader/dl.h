/* dlopen/dlsym with the error text captured at once (dlerror is per thread and read-once). */
#ifndef NCCLSHIM_LOADER_DL_H
#define NCCLSHIM_LOADER_DL_H

#include <stddef.h>

/* A function pointer of no particular type, for moving dlsym results into typed slots. */
typedef void (*ncshl_fn)(void);

/* dlopen(name, RTLD_NOW | RTLD_LOCAL | extra_flags). On failure returns NULL and writes the
 * dlerror text (or a note that there was none) to reason. */
void *ncshl_open(const char *name, int extra_flags, char *reason, size_t size);
/* The library called `name` if it is already mapped in the process (RTLD_NOLOAD), else NULL. */
void *ncshl_open_loaded(const char *name);
/* Absolute, symlink-free path of the file behind a handle; malloc'd; NULL if unknown. */
char *ncshl_mapped_path(void *handle);
/* The address of `symbol` in that library only, or NULL. */
ncshl_fn ncshl_symbol(void *handle, const char *symbol);
void *ncshl_object(void *handle, const char *symbol);

#endif
