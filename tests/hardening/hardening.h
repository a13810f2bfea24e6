/* Helpers shared by the hardening tests (on top of tests/support/support.h). */
#ifndef NCCLSHIM_TEST_HARDENING_H
#define NCCLSHIM_TEST_HARDENING_H

#include <stddef.h>

#include "support.h"

/* An absolute path of exactly `length` characters that names nothing: "/" followed by
 * directories of 200 'a's (each a valid name) separated by '/'. malloc'd. */
char *hs_long_path(size_t length);
/* Write `size` bytes to a new file (mode 0755). */
void hs_write(const char *path, const void *bytes, size_t size);
/* Overwrite one byte of an existing file. */
void hs_patch(const char *path, long offset, unsigned char byte);

/* 1 when this process can start helper programs (an emulator without binfmt_misc cannot:
 * the kernel refuses the foreign ELF); otherwise 0 and the reason in `why`. */
int hs_helpers_run(const char *helper, char *why, size_t size);

/* Run fn(arg) in a forked child; returns its exit status (fn's return value), 128 + signal
 * when it was killed, or -1 when it ran past timeout_ms (it is then killed). */
int hs_in_child(int (*fn)(void *arg), void *arg, int timeout_ms);

/* In a child running as root: give up root for uid/gid 65534 (nobody). 0 on success. */
int hs_become_nobody(void);

/* Lines of the scenario output that start with `prefix`. */
int hs_count_lines(const scenario *s, const char *prefix);
/* The attempt line "<who>.attempt.N=..." containing `needle`, "" if none. */
const char *hs_attempt(const scenario *s, const char *who, const char *needle);

#endif
