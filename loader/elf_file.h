/* A library file read as bytes, never as a library: mapped read-only after ncshl_elf_check, its
 * section headers and the tables they name reached with every offset checked against the
 * file's size, so a truncated, foreign or hostile file gives a reason, not a crash, and none of
 * its code runs. One reader for every caller that looks inside a file (its exports, its
 * SONAME, the versions it needs, a section's bytes). */
#ifndef NCCLSHIM_LOADER_ELF_FILE_H
#define NCCLSHIM_LOADER_ELF_FILE_H

#include <link.h>
#include <stddef.h>

#include "outcome.h"

typedef struct ncshl_elf_file {
  const unsigned char *bytes; /* the whole file, mapped read-only */
  size_t size;
  unsigned long long shoff; /* the section header table, inside the file */
  unsigned shnum;           /* 0: the file has none and no dynamic section to stand in */
  unsigned shstrndx;
  /* A file stripped of its section headers (both loaders take it): sections made from its
   * dynamic section and segments instead (.dynsym, .dynstr, .dynamic, .gnu.version_r,
   * .rodata), which ncshl_elf_section gives when `synthetic` is set. */
  int synthetic;
  ElfW(Shdr) made[6];
} ncshl_elf_file;

/* NCSHL_OK with *f ready; else NCSHL_ABSENT or NCSHL_UNLOADABLE with the reason (ncshl_elf_check's,
 * or a malformed section header table). Close with ncshl_elf_close (also after a failure). */
ncshl_outcome ncshl_elf_open(const char *path, ncshl_elf_file *f, char *reason, size_t size);
/* The same over bytes the caller keeps alive (the fuzz harnesses' input). */
ncshl_outcome ncshl_elf_open_bytes(const unsigned char *bytes, size_t length, ncshl_elf_file *f,
                                   char *reason, size_t size);
void ncshl_elf_close(ncshl_elf_file *f);

/* The index-th section header into *out; 0 when out of range. Its contents lie inside the file
 * when ncshl_elf_inside(f, out->sh_offset, out->sh_size) (SHT_NOBITS sections have none). */
int ncshl_elf_section(const ncshl_elf_file *f, unsigned index, ElfW(Shdr) * out);
int ncshl_elf_inside(const ncshl_elf_file *f, unsigned long long offset, unsigned long long length);
/* The section's name (from the section name table), or NULL. */
const char *ncshl_elf_section_name(const ncshl_elf_file *f, const ElfW(Shdr) * s);
/* The NUL-terminated string at `offset` of the string table `strtab` (a section header), or
 * NULL when it does not lie inside that table. */
const char *ncshl_elf_string(const ncshl_elf_file *f, const ElfW(Shdr) * strtab, size_t offset);

/* Called once per defined global or weak symbol of .dynsym, with 1 in is_function for a function
 * (STT_FUNC, STT_GNU_IFUNC); return non-zero to stop. */
typedef int (*ncshl_symbol_fn)(void *context, const char *name, int is_function);
/* Walks .dynsym. NCSHL_OK (also when the file has none), or NCSHL_UNLOADABLE with the reason
 * when the table or its string table is malformed. */
ncshl_outcome ncshl_elf_each_export(const ncshl_elf_file *f, ncshl_symbol_fn each, void *context,
                                    char *reason, size_t size);
/* Called once per entry of the dynamic section (up to DT_NULL) whose value names a string
 * (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH), with that string; return non-zero to stop. */
typedef int (*ncshl_dynamic_fn)(void *context, long long tag, const char *string);
/* Those strings of the file at `path`, read as the dynamic loader reads them: through the
 * program headers (the PT_DYNAMIC entries and DT_STRTAB where the PT_LOAD segments put them),
 * with a few preads rather than a mapping of the file. A file of another class, byte order or
 * machine, which the loader refuses, gives none. Each string lives only during its call. */
void ncshl_elf_read_dynamic(const char *path, ncshl_dynamic_fn each, void *context);

/* ncshl_elf_open, ncshl_elf_each_export and ncshl_elf_close of the file at `path`. */
ncshl_outcome ncshl_elf_exports(const char *path, ncshl_symbol_fn each, void *context, char *reason,
                                size_t size);

#endif
