/* What a library file says about itself, read from its bytes without loading or running it:
 * its SONAME, the functions its dynamic symbol table defines, the newest GLIBC_ version it
 * needs, and NCCL's version banner ("NCCL version 2.28.9+cuda13.0") in its read-only data. */
#ifndef NCCLSHIM_PROBE_ELF_FACTS_H
#define NCCLSHIM_PROBE_ELF_FACTS_H

#include <stddef.h>

#include "loader/elf_file.h"

typedef struct elf_facts {
  int ok;                /* 1 when the file was read as an ELF shared object of this machine */
  char reason[160];      /* why not, when ok is 0 */
  char soname[64];       /* DT_SONAME, "" when none */
  char glibc_need[24];   /* the newest GLIBC_x.y it needs ("GLIBC_2.34"), "" when none */
  int glibc_need_packed; /* that version as major*1000 + minor (2034); 0 when none */
  int banner_version;    /* packed NCCL version of the banner (22809), 0 when none */
  char build[32];        /* the banner's build tag ("+cuda13.0"), "" when none */
  int is_dropin;         /* it exports NCCLSHIM_DROPIN_MARKER_NAME: ncclshim's drop-in */
  /* private: the file, mapped, and the functions it defines (names inside the mapping),
   * sorted for bsearch */
  ncshl_elf_file file;
  const char **functions;
  size_t function_count;
} elf_facts;

/* Reads `path` into *f. Returns f->ok; on failure f->reason says why. Free with
 * elf_facts_close (also after a failure). */
int elf_facts_read(const char *path, elf_facts *f);
void elf_facts_close(elf_facts *f);

/* 1 when the file's dynamic symbol table defines the function `name` (any version). */
int elf_facts_defines(const elf_facts *f, const char *name);

/* The glibc this process runs on, packed as glibc_need_packed (2036 for 2.36). */
int elf_facts_host_glibc(void);

#endif
