/* The objects mapped in this process, read from memory (dl_iterate_phdr): which of them define
 * a given symbol in their dynamic symbol table, and the GNU build-id note of the one holding an
 * address. Nothing is opened, loaded or read from a file, so that a census of the process costs
 * microseconds and cannot change what it counts. Every read of an object's notes, hash and
 * symbol tables is checked to lie inside that object's readable PT_LOAD segments: a corrupt
 * table that glibc never reads (or reads differently) is taken as absent, never followed. */
#ifndef NCCLSHIM_LOADER_OBJECTS_H
#define NCCLSHIM_LOADER_OBJECTS_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* What a dynamic symbol is. */
typedef enum ncshl_symbol_kind {
  NCSHL_SYMBOL_FUNCTION, /* STT_FUNC or STT_GNU_IFUNC */
  NCSHL_SYMBOL_DATA,     /* a variable, or a symbol of no type */
  NCSHL_SYMBOL_TLS       /* a thread-local variable */
} ncshl_symbol_kind;

typedef struct ncshl_mapped {
  char *path;     /* absolute and symlink-free where possible; the program's own for it */
  int is_program; /* the executable itself (a library linked statically into it) */
  void *address;  /* where the symbol lies (NULL for a thread-local one) */
  ncshl_symbol_kind kind;
} ncshl_mapped;

/* Every mapped object whose own dynamic symbol table defines `symbol`, in the loader's order
 * (the program first). Returns 0 with a malloc'd array in *objects (NULL when none), or -1 when
 * out of memory. */
int ncshl_objects_defining(const char *symbol, ncshl_mapped **objects, size_t *count);
void ncshl_objects_free(ncshl_mapped *objects, size_t count);

/* The symbol `name` as the mapped object whose dynamic section is `dynamic` (relocated by
 * `base`, its load address) defines it (global or weak, not undefined), found through its GNU
 * or System V hash table as ld.so finds it; NULL when it does not, or the section is NULL,
 * lacks the tables, or is not the PT_DYNAMIC of the object mapped at `base`. Every read is
 * bounded by that object's PT_LOAD segments (its program headers read from its mapping with
 * process_vm_readv, which cannot fault). For code that is handed link maps (an auditor) as
 * for the census. */
const ElfW(Sym) * ncshl_dynamic_lookup(const ElfW(Dyn) * dynamic, uintptr_t base, const char *name);

/* 1 when glibc's lookup of `name` (dlsym, on any handle) would read outside the mapping of
 * some object's hash table, symbol table, strings or versions, or follow a hash chain
 * forever: a corrupt file that the lookup would crash or hang on. Its path then goes to
 * `object` (`size` bytes; 0 for none). Reads every table as glibc's walk does, each read
 * checked to lie inside the object's PT_LOAD segments; 0 when every walk stays inside. */
int ncshl_lookup_unsafe(const char *name, char *object, size_t size);

/* The mapped object holding an address, and what `name` is there. */
typedef struct ncshl_held {
  ncshl_symbol_kind kind; /* the object's own entry for `name`; without one, FUNCTION when
                             the address lies in an executable segment, else DATA */
  uintptr_t base;         /* the object's load address (link_map's l_addr) */
  const char *name;       /* its link-map name, valid while it stays mapped */
  int is_program;         /* the executable itself */
} ncshl_held;

/* The path of a held object, as ncshl_mapped's: malloc'd (NULL when out of memory). Apart,
 * because resolving it costs a readlink per path component and most callers never need it. */
char *ncshl_held_path(const ncshl_held *held);

/* 1 with *held filled when a mapped object's PT_LOAD segment holds `address`; 0 when none
 * does (a thread-local variable's address). Reads only bounded tables, never glibc's
 * dladdr, which walks every symbol of a possibly corrupt table. */
int ncshl_object_holding(const void *address, const char *name, ncshl_held *held);

/* The link-map name of the mapped object called `name`: for a bare name, the first whose
 * DT_SONAME or file name it is; for a path, the object mapped from that file (same device and
 * inode, a stat, no open). malloc'd; NULL when none is mapped (or out of memory). Unlike
 * dlopen(RTLD_NOLOAD) of a bare name, which makes glibc open every candidate file of its search
 * (and block forever on a FIFO), this reads only memory. */
char *ncshl_mapped_name(const char *name);

/* The GNU build-id of the mapped object that holds `address`: its length in bytes (0 when the
 * object has none or no object holds the address), with up to `size` bytes copied to `id`. */
size_t ncshl_build_id(const void *address, unsigned char *id, size_t size);

#endif
