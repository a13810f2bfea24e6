#include "blocking.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

int ncshl_would_block(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (S_ISFIFO(st.st_mode)) return 1;
  if (!S_ISCHR(st.st_mode)) return 0;
  /* O_NONBLOCK: the open itself cannot wait; then whether a read would. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int ready = poll(&p, 1, 0) == 1;
  close(fd);
  return !ready;
}

/* Legacy hardware subdirectory names of glibc before 2.37 (`ld.so --help` lists this
 * machine's), besides the platform string of the auxiliary vector. */
static const char *const legacy_names[] = {"tls",      "x86_64",  "haswell", "xeon_phi",
                                           "avx512_1", "i686",    "aarch64", "power8",
                                           "power9",   "power10", "z13",     "z14"};

enum { LEGACY_DEPTH = 4 };

static int blocks_at(const char *path, char *file, size_t size) {
  if (!ncshl_would_block(path)) return 0;
  snprintf(file, size, "%s", path);
  return 1;
}

static int legacy_blocks(const char *dir, const char *name, int depth, char *file, size_t size) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) return 0;
  if (blocks_at(path, file, size)) return 1;
  if (depth == LEGACY_DEPTH) return 0;
  const char *platform = (const char *)getauxval(AT_PLATFORM);
  size_t count = sizeof(legacy_names) / sizeof(legacy_names[0]);
  for (size_t i = 0; i <= count; i++) {
    const char *sub = i < count ? legacy_names[i] : platform;
    struct stat st;
    if (sub == NULL || snprintf(path, sizeof(path), "%s/%s", dir, sub) >= (int)sizeof(path) ||
        stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (legacy_blocks(path, name, depth + 1, file, size)) return 1;
  }
  return 0;
}

int ncshl_dir_blocks(const char *dir, const char *name, char *file, size_t size) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof(path), "%s/glibc-hwcaps", dir) >= (int)sizeof(path)) return 0;
  DIR *levels = opendir(path);
  int found = 0;
  for (struct dirent *e; levels != NULL && !found && (e = readdir(levels)) != NULL;) {
    char level[PATH_MAX];
    if (e->d_name[0] != '.' &&
        snprintf(level, sizeof(level), "%s/%s/%s", path, e->d_name, name) < (int)sizeof(level))
      found = blocks_at(level, file, size);
  }
  if (levels != NULL) closedir(levels);
  return found || legacy_blocks(dir, name, 0, file, size);
}

void ncshl_search_dirs(ncshl_list *dirs) {
  void *program = dlopen(NULL, RTLD_NOW);
  Dl_serinfo sizes;
  Dl_serinfo *info = NULL;
  if (program != NULL && dlinfo(program, RTLD_DI_SERINFOSIZE, &sizes) == 0 &&
      (info = malloc(sizes.dls_size)) != NULL &&
      (dlinfo(program, RTLD_DI_SERINFOSIZE, info) != 0 ||
       dlinfo(program, RTLD_DI_SERINFO, info) != 0)) {
    free(info);
    info = NULL;
  }
  for (unsigned i = 0; info != NULL && i < info->dls_cnt; i++) {
    const char *dir = info->dls_serpath[i].dls_name;
    ncshl_list_add(dirs, dir[0] ? dir : ".", NULL);
  }
  free(info);
  if (program != NULL) dlclose(program);
  dlerror();
}

int ncshl_search_blocks(const char *name, char *file, size_t size) {
  ncshl_list dirs = {0};
  ncshl_search_dirs(&dirs);
  int found = 0;
  for (size_t i = 0; i < dirs.count && !found; i++)
    found = ncshl_dir_blocks(dirs.items[i].path, name, file, size);
  ncshl_list_free(&dirs);
  return found;
}
