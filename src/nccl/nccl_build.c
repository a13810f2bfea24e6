/* NCCL's banner, "NCCL version 2.28.9+cuda13.0", which it carries as a string in .rodata: the
 * version and the "+cudaX.Y" build tag, read from the file without loading it, through the loader's
 * ELF reader (which checks the file first) and its banner scan (loader/elf_banner.c, which the
 * probe's file facts use too). Only .rodata's pages are touched (a few hundred KB of a 200 MB
 * library, mapped read-only), located through the section table; a file without one is
 * scanned whole. */
#include <stdlib.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "loader/elf_banner.h"
#include "nccl_handle.h"

int ncs_nccl_read_banner(const char *path, char **tag) {
  if (tag != NULL) *tag = NULL;
  ncshl_elf_file f;
  char reason[256], found[32];
  int packed = 0;
  if (ncshl_elf_open(path, &f, reason, sizeof(reason)) == NCSHL_OK)
    packed = ncshl_elf_banner(&f, "NCCL version ", found, sizeof(found));
  ncshl_elf_close(&f);
  if (packed != 0 && tag != NULL) *tag = strdup(found);
  return packed;
}

const char *ncclshim_nccl_build(ncclshim_nccl *nccl) {
  if (nccl == NULL || nccl->core.path == NULL) return "";
  pthread_mutex_lock(&nccl->lazy_lock);
  if (nccl->build == NULL) {
    ncs_nccl_read_banner(nccl->core.path, &nccl->build);
    if (nccl->build == NULL) nccl->build = strdup("");
  }
  pthread_mutex_unlock(&nccl->lazy_lock);
  return nccl->build ? nccl->build : "";
}
