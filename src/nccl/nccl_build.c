/* NCCL's banner, "NCCL version 2.28.9+cuda13.0", which it carries as a string in .rodata: the
 * version and the "+cudaX.Y" build tag, read from the file without loading it. Only .rodata is
 * read (a few hundred KB of a 200 MB library), located through the section table; a file
 * without one is scanned whole. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_handle.h"

enum { MAX_SECTIONS = 4096, MAX_RODATA = 64 << 20 };

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

static int read_exact(int fd, void *buf, size_t length, off_t offset) {
  return pread(fd, buf, length, offset) == (ssize_t)length;
}

/* The .rodata section's offset and size, from the section table; 0 when not found. */
static int find_rodata(int fd, unsigned long long file_size, off_t *offset, size_t *length) {
  ElfW(Ehdr) eh;
  if (!read_exact(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shnum > MAX_SECTIONS ||
      eh.e_shstrndx >= eh.e_shnum || eh.e_shoff > file_size ||
      (unsigned long long)eh.e_shnum * sizeof(ElfW(Shdr)) > file_size - eh.e_shoff)
    return 0;
  size_t table = (size_t)eh.e_shnum * sizeof(ElfW(Shdr));
  ElfW(Shdr) *sh = malloc(table);
  int found = 0;
  if (sh != NULL && read_exact(fd, sh, table, (off_t)eh.e_shoff)) {
    const ElfW(Shdr) *names = &sh[eh.e_shstrndx];
    for (int i = 0; i < eh.e_shnum && !found; i++) {
      char name[8] = "";
      if (sh[i].sh_name >= names->sh_size ||
          !read_exact(fd, name, sizeof(name), (off_t)(names->sh_offset + sh[i].sh_name)))
        continue;
      if (memcmp(name, ".rodata", 8) == 0 && sh[i].sh_type == SHT_PROGBITS &&
          sh[i].sh_offset <= file_size && sh[i].sh_size <= file_size - sh[i].sh_offset &&
          sh[i].sh_size <= MAX_RODATA) {
        *offset = (off_t)sh[i].sh_offset;
        *length = (size_t)sh[i].sh_size;
        found = 1;
      }
    }
  }
  free(sh);
  return found;
}

int ncclshim_nccl_read_banner(const char *path, char **tag) {
  if (tag != NULL) *tag = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  int packed = 0;
  struct stat st;
  off_t offset = 0;
  size_t length = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    if (find_rodata(fd, (unsigned long long)st.st_size, &offset, &length)) {
      char *data = malloc(length ? length : 1);
      if (data != NULL && read_exact(fd, data, length, offset))
        packed = scan_banner(data, length, tag);
      free(data);
    } else {
      void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data != MAP_FAILED) {
        packed = scan_banner(data, (size_t)st.st_size, tag);
        munmap(data, (size_t)st.st_size);
      }
    }
  }
  close(fd);
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
