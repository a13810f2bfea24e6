/* A cheap look at a library file before dlopen: glibc maps PT_LOAD segments without checking
 * that they lie inside the file, so a truncated library would kill the process with SIGBUS. */
#ifndef NCCLSHIM_LOADER_ELF_CHECK_H
#define NCCLSHIM_LOADER_ELF_CHECK_H

#include <stddef.h>

#include "outcome.h"

/* NCSHL_OK when `path` is a readable ELF shared object for this machine whose loadable segments
 * all lie inside the file. NCSHL_ABSENT when there is no such file (also when the path is too
 * long to name one); NCSHL_UNLOADABLE otherwise,
 * with the reason written to `reason`. */
ncshl_outcome ncshl_elf_check(const char *path, char *reason, size_t size);

/* The same check over bytes already in memory (the file's contents and its size). */
ncshl_outcome ncshl_elf_check_bytes(const unsigned char *bytes, size_t length,
                                    unsigned long long file_size, char *reason, size_t size);

/* This machine's ELF e_machine (EM_X86_64, ...). */
unsigned ncshl_elf_native_machine(void);

#endif
