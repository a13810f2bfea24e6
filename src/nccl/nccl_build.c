/* The "+cudaX.Y" build tag, read from the "NCCL version 2.28.9+cuda13.0" banner that NCCL
 * carries as a string. Read lazily: the file is large and most callers never ask. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_handle.h"

static char *scan_build(const char *path) {
  static const char banner[] = "NCCL version ";
  char *tag = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    size_t length = (size_t)st.st_size;
    const char *data = mmap(NULL, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      const char *p = data, *end = data + length;
      while (tag == NULL && (p = memmem(p, (size_t)(end - p), banner, sizeof(banner) - 1))) {
        p += sizeof(banner) - 1;
        const char *v = p;
        while (v < end && (*v == '.' || (*v >= '0' && *v <= '9'))) v++;
        if (v > p && v < end && *v == '+') {
          const char *t = v;
          while (t < end && t - v < 32 && *t > ' ' && *t < 127) t++;
          tag = strndup(v, (size_t)(t - v));
        }
      }
      munmap((void *)data, length);
    }
  }
  close(fd);
  return tag;
}

const char *ncclshim_nccl_build(ncclshim_nccl *nccl) {
  if (nccl == NULL || nccl->core.path == NULL) return "";
  pthread_mutex_lock(&nccl->lazy_lock);
  if (nccl->build == NULL) {
    nccl->build = scan_build(nccl->core.path);
    if (nccl->build == NULL) nccl->build = strdup("");
  }
  pthread_mutex_unlock(&nccl->lazy_lock);
  return nccl->build ? nccl->build : "";
}
