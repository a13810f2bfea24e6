/* The names a shared object exports, read from its file's dynamic symbol table without
 * mapping it as a library: no constructor of the file runs. */
#ifndef NCCLSHIM_LOADER_ELF_SYMBOLS_H
#define NCCLSHIM_LOADER_ELF_SYMBOLS_H

#include <stddef.h>

#include "outcome.h"

/* Called once per defined global or weak symbol of .dynsym; return non-zero to stop. */
typedef int (*ncshl_symbol_fn)(void *context, const char *name);

/* Runs ncshl_elf_check on `path`, then reads its section headers, .dynsym and the string
 * table it links, every offset checked against the file's size. NCSHL_OK after the walk (also
 * when the file has no .dynsym: nothing is exported), NCSHL_ABSENT or NCSHL_UNLOADABLE with the
 * reason. */
ncshl_outcome ncshl_elf_exports(const char *path, ncshl_symbol_fn each, void *context, char *reason,
                                size_t size);

#endif
