/* The glibc-hwcaps subdirectories the dynamic loader searches on this CPU (glibc 2.33 and
 * later): in each directory of its search (LD_LIBRARY_PATH, RUNPATH, the system's) it tries
 * <dir>/glibc-hwcaps/<level>/<name> for each level the CPU reaches, highest first, before
 * <dir>/<name>. `ld.so --help` lists them ("supported, searched"). */
#ifndef NCCLSHIM_LOADER_HWCAPS_H
#define NCCLSHIM_LOADER_HWCAPS_H

#include <stddef.h>

/* The levels this CPU reaches, in the loader's order, into `levels` (at most `max`): x86-64's
 * x86-64-v4, -v3, -v2 (by CPUID and the registers the kernel saves); POWER's power10,
 * power9 (by AT_HWCAP2). The count; 0 on other machines. */
size_t ncshl_hwcaps_levels(const char **levels, size_t max);

#endif
