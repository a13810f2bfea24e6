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
 * machine's), besides the platform string of the auxiliary vector: those glibc forms on this
 * architecture (its platform names and the hardware capabilities it marks important). */
static const char *const legacy_names[] = {
#if defined(__x86_64__) || defined(__i386__)
    "tls",      "x86_64", "haswell", "xeon_phi",
    "avx512_1", "i686"
#elif defined(__aarch64__)
    "tls", "aarch64"
#elif defined(__powerpc64__) || defined(__powerpc__)
    "tls", "power8", "power9", "power10"
#elif defined(__s390x__) || defined(__s390__)
    "tls", "z13", "z14"
#else
    "tls",    "x86_64", "haswell", "xeon_phi", "avx512_1", "i686", "aarch64",
    "power8", "power9", "power10", "z13",      "z14"
#endif
};

enum { LEGACY_DEPTH = 4 };

static int listed(const char *name) {
  for (size_t i = 0; i < sizeof(legacy_names) / sizeof(legacy_names[0]); i++)
    if (strcmp(legacy_names[i], name) == 0) return 1;
  return 0;
}

/* Called with each directory where the loader tries a name, in its order; non-zero stops. */
typedef int (*place_fn)(void *context, const char *place);

static int legacy_places(const char *dir, int depth, place_fn each, void *context) {
  if (each(context, dir)) return 1;
  if (depth == LEGACY_DEPTH) return 0;
  const char *platform = (const char *)getauxval(AT_PLATFORM);
  size_t count = sizeof(legacy_names) / sizeof(legacy_names[0]);
  char path[PATH_MAX];
  for (size_t i = 0; i <= count; i++) {
    const char *sub = i < count ? legacy_names[i] : platform;
    struct stat st;
    if (sub == NULL || (i == count && listed(platform)) ||
        snprintf(path, sizeof(path), "%s/%s", dir, sub) >= (int)sizeof(path) ||
        stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (legacy_places(path, depth + 1, each, context)) return 1;
  }
  return 0;
}

/* Each place under `dir`: every glibc-hwcaps/<level> present (whether or not this CPU reaches
 * it), `dir` itself, the legacy subdirectories present. Nothing under a directory that is
 * absent. */
static int dir_places(const char *dir, place_fn each, void *context) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  char path[PATH_MAX];
  if (snprintf(path, sizeof(path), "%s/glibc-hwcaps", dir) >= (int)sizeof(path)) return 0;
  DIR *levels = opendir(path);
  int stop = 0;
  for (struct dirent *e; levels != NULL && !stop && (e = readdir(levels)) != NULL;) {
    char level[PATH_MAX];
    if (e->d_name[0] != '.' &&
        snprintf(level, sizeof(level), "%s/%s", path, e->d_name) < (int)sizeof(level))
      stop = each(context, level);
  }
  if (levels != NULL) closedir(levels);
  return stop || legacy_places(dir, 0, each, context);
}

typedef struct name_check {
  const char *name;
  char *file;
  size_t size;
} name_check;

static int place_blocks(void *context, const char *place) {
  name_check *c = context;
  char path[PATH_MAX];
  if (snprintf(path, sizeof(path), "%s/%s", place, c->name) >= (int)sizeof(path) ||
      !ncshl_would_block(path))
    return 0;
  snprintf(c->file, c->size, "%s", path);
  return 1;
}

int ncshl_dir_blocks(const char *dir, const char *name, char *file, size_t size) {
  name_check c = {name, file, size};
  return dir_places(dir, place_blocks, &c);
}

static int add_place(void *context, const char *place) {
  ncshl_list_add(context, place, NULL);
  return 0;
}

int ncshl_dir_places(const char *dir, ncshl_list *places) {
  dir_places(dir, add_place, places);
  return places->out_of_memory ? -1 : 0;
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
