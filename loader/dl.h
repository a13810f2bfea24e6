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
/* The address of `symbol` in that library only, or NULL (also when glibc's lookup of the name
 * would read outside some object's tables: ncshl_lookup_unsafe). */
ncshl_fn ncshl_symbol(void *handle, const char *symbol);
void *ncshl_object(void *handle, const char *symbol);

/* What `symbol`, as resolved through `handle`, turned out to be. */
typedef enum ncshl_definition {
  NCSHL_DEFINED_NOWHERE, /* not found */
  NCSHL_DEFINED_FUNCTION,
  NCSHL_DEFINED_DATA,     /* a variable: calling it would jump into data */
  NCSHL_DEFINED_UNPLACED, /* an address in no mapped object: a thread-local variable */
  NCSHL_DEFINED_CORRUPT   /* never looked up: glibc's lookup would read outside the tables of
                             the object in *definer (ncshl_lookup_unsafe) */
} ncshl_definition;

/* Resolve `symbol` through `handle` and say what it is: the object holding its address and
 * its entry there (ncshl_object_holding, bounded reads; never dladdr, whose walk of every
 * symbol crashes on a corrupt table that dlsym of one name survives).
 * *address gets its address (or NULL). When it is defined by another object than the one the
 * handle maps (a library that only links the real one), *definer gets that object's path,
 * malloc'd; otherwise NULL. `definer` may be NULL when only the kind is wanted. */
ncshl_definition ncshl_define(void *handle, const char *symbol, void **address, char **definer);

#endif
