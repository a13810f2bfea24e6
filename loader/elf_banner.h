/* A version banner a library carries as text in its read-only data, such as
 * "<key>2.28.9+cuda13.0": found in a file read by elf_file.c, never loaded. The key is the
 * caller's: the loader knows no library's banner. */
#ifndef NCCLSHIM_LOADER_ELF_BANNER_H
#define NCCLSHIM_LOADER_ELF_BANNER_H

#include <stddef.h>

#include "elf_file.h"

/* The first "<key>MAJOR.MINOR.PATCH" (each at most 99) in the file's .rodata section, or in
 * the whole file when it has no readable .rodata: MAJOR * 10000 + MINOR * 100 + PATCH, 0 when
 * there is none. Text after the key that is no such version (a format string's "%s", 0.0.0)
 * is skipped. `tag` (size > 0) gets what follows the version when it starts with '+' ("+cuda13.0":
 * printable characters up to a space, at most size - 1 of them), else "". */
int ncshl_elf_banner(const ncshl_elf_file *f, const char *key, char *tag, size_t size);

#endif
