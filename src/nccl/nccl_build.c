/* NCCL's banner, "NCCL version 2.28.9+cuda13.0", which it carries as a string in .rodata: the
 * version and the "+cudaX.Y" build tag, read from the file without loading it, through the loader's
 * ELF reader (which checks the file first). Only .rodata's pages are touched (a few hundred KB of
 * a 200 MB library, mapped read-only), located through the section table; a file without one
 * is scanned whole. */
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "../../loader/elf_file.h"
#include "nccl_handle.h"

/* The first banner in the bytes: the packed version, and the tag into *tag. */
static int scan_banner(const char *data, size_t length, char **tag) {
  static const char banner[] = "NCCL version ";
  const char *p = data, *end = data + length;
  while ((p = memmem(p, (size_t)(end - p), banner, sizeof(banner) - 1)) != NULL) {
    p += sizeof(banner) - 1;
    int part[3] = {0, 0, 0}, parts = 0;
    const char *v = p;
    for (; v < end && parts < 3 && *v >= '0' && *v <= '9'; parts++) {
      while (v < end && *v >= '0' && *v <= '9' && part[parts] < 100000)
        part[parts] = part[parts] * 10 + (*v++ - '0');
      if (v < end && *v == '.' && parts < 2) v++;
    }
    if (parts < 3 || part[1] > 99 || part[2] > 99 || v >= end || (*v != '+' && *v != '\0'))
      continue;
    const char *t = v;
    while (t < end && t - v < 32 && *t > ' ' && *t < 127) t++;
    if (tag != NULL) *tag = strndup(v, (size_t)(t - v));
    return part[0] * 10000 + part[1] * 100 + part[2];
  }
  return 0;
}

int ncclshim_nccl_read_banner(const char *path, char **tag) {
  if (tag != NULL) *tag = NULL;
  ncshl_elf_file f;
  char reason[256];
  if (ncshl_elf_open(path, &f, reason, sizeof(reason)) != NCSHL_OK) {
    ncshl_elf_close(&f);
    return 0;
  }
  int packed = 0, found = 0;
  for (unsigned i = 0; i < f.shnum && !found; i++) {
    ElfW(Shdr) s;
    ncshl_elf_section(&f, i, &s);
    const char *name = ncshl_elf_section_name(&f, &s);
    if (name != NULL && strcmp(name, ".rodata") == 0 && s.sh_type == SHT_PROGBITS &&
        ncshl_elf_inside(&f, s.sh_offset, s.sh_size)) {
      packed = scan_banner((const char *)f.bytes + s.sh_offset, (size_t)s.sh_size, tag);
      found = 1;
    }
  }
  if (!found) packed = scan_banner((const char *)f.bytes, f.size, tag); /* no section table */
  ncshl_elf_close(&f);
  return packed;
}

const char *ncclshim_nccl_build(ncclshim_nccl *nccl) {
  if (nccl == NULL || nccl->core.path == NULL) return "";
  pthread_mutex_lock(&nccl->lazy_lock);
  if (nccl->build == NULL) {
    ncclshim_nccl_read_banner(nccl->core.path, &nccl->build);
    if (nccl->build == NULL) nccl->build = strdup("");
  }
  pthread_mutex_unlock(&nccl->lazy_lock);
  return nccl->build ? nccl->build : "";
}
