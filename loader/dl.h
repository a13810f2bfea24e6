/* dlopen/dlsym with the error text captured at once (dlerror is per thread and read-once). */
#ifndef NCCLSHIM_LOADER_DL_H
#define NCCLSHIM_LOADER_DL_H

#include <stddef.h>

/* A function pointer of no particular type, for moving dlsym results into typed slots. */
typedef void (*ncshl_fn)(void);

/* dlopen(name, RTLD_NOW | RTLD_LOCAL | extra_flags). On failure returns NULL and writes the
 * dlerror text (or a note that there was none) to reason. */
void *ncshl_open(const char *name, int extra_flags, char *reason, size_t size);
/* The library called `name` (a SONAME or a path) if it is already mapped in the process, else
 * NULL. Found from memory (ncshl_mapped_name), then taken with RTLD_NOLOAD by its link-map
 * name: no file is opened. */
void *ncshl_open_loaded(const char *name);
/* Absolute, symlink-free path of the file behind a handle; malloc'd; NULL if unknown. */
char *ncshl_mapped_path(void *handle);
/* The address of `symbol` in that library only, or NULL. */
ncshl_fn ncshl_symbol(void *handle, const char *symbol);
void *ncshl_object(void *handle, const char *symbol);

/* What `symbol`, as resolved through `handle`, turned out to be. */
typedef enum ncshl_definition {
  NCSHL_DEFINED_NOWHERE, /* not found */
  NCSHL_DEFINED_FUNCTION,
  NCSHL_DEFINED_DATA,    /* a variable: calling it would jump into data */
  NCSHL_DEFINED_UNPLACED /* an address in no mapped object: a thread-local variable */
} ncshl_definition;

/* Resolve `symbol` through `handle` and say what it is (dladdr1 and the symbol's ELF type).
 * *address gets its address (or NULL). When it is defined by another object than the one the
 * handle maps (a library that only links the real one), *definer gets that object's path,
 * malloc'd; otherwise NULL. `definer` may be NULL when only the kind is wanted. */
ncshl_definition ncshl_define(void *handle, const char *symbol, void **address, char **definer);

#endif
