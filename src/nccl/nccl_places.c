/* The directories an NCCL may be installed in, outside the system loader's own: the active
 * environment's (a Python virtual environment or conda environment, the running interpreter's
 * prefix), searched before the ld.so cache, and the well-known install places after it. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_handle.h"

typedef struct places {
  char **items; /* NULL-terminated */
  size_t count;
} places;

static void add(places *p, const char *a, const char *b) {
  size_t length = strlen(a) + strlen(b) + 1;
  char *dir = malloc(length);
  if (dir == NULL) return;
  snprintf(dir, length, "%s%s", a, b);
  for (size_t i = 0; i < p->count; i++) {
    if (strcmp(p->items[i], dir) == 0) { /* same place named twice: search it once */
      free(dir);
      return;
    }
  }
  char **grown = realloc(p->items, (p->count + 2) * sizeof(char *));
  if (grown == NULL) {
    free(dir);
    return;
  }
  p->items = grown;
  p->items[p->count++] = dir;
  p->items[p->count] = NULL;
}

static places start(void) {
  places p = {calloc(1, sizeof(char *)), 0};
  return p;
}

/* An absolute directory from the environment, or NULL: relative values are ignored so that
 * nothing is searched relative to the current directory. */
static const char *env_dir(const char *name) {
  const char *value = secure_getenv(name);
  return value != NULL && value[0] == '/' ? value : NULL;
}

static int newest_first(const void *a, const void *b) {
  return strverscmp(*(const char *const *)b, *(const char *const *)a);
}

/* <prefix>/lib/python3.N/site-packages/nvidia/nccl/lib for every N, newest Python first. */
static void add_wheel_dirs(places *p, const char *prefix) {
  char lib[PATH_MAX];
  if (snprintf(lib, sizeof(lib), "%s/lib", prefix) >= (int)sizeof(lib)) return;
  DIR *dir = opendir(lib);
  if (dir == NULL) return;
  char **names = NULL;
  size_t count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (strncmp(entry->d_name, "python3.", 8) != 0) continue;
    char **grown = realloc(names, (count + 1) * sizeof(char *));
    if (grown == NULL) break;
    names = grown;
    if ((names[count] = strdup(entry->d_name)) != NULL) count++;
  }
  closedir(dir);
  if (count > 1) qsort(names, count, sizeof(names[0]), newest_first);
  for (size_t i = 0; i < count; i++) {
    char sub[NAME_MAX + 64];
    snprintf(sub, sizeof(sub), "/lib/%s/site-packages/nvidia/nccl/lib", names[i]);
    add(p, prefix, sub);
    free(names[i]);
  }
  free(names);
}

char **ncclshim_nccl_environment_places(void) {
  places p = start();
  if (p.items == NULL) return NULL;
  const char *dir;
  if ((dir = env_dir("VIRTUAL_ENV"))) add_wheel_dirs(&p, dir);
  if ((dir = env_dir("CONDA_PREFIX"))) {
    add(&p, dir, "/lib");
    add_wheel_dirs(&p, dir); /* pip inside a conda environment */
  }
  /* The running program's prefix (/opt/venv for /opt/venv/bin/python3). */
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *prefix = dirname(dirname(exe));
    if (strcmp(prefix, "/") != 0) add_wheel_dirs(&p, prefix);
  }
  return p.items;
}

char **ncclshim_nccl_places(void) {
  places p = start();
  if (p.items == NULL) return NULL;
  const char *dir;
  if ((dir = env_dir("NCCL_HOME"))) add(&p, dir, "/lib");
  if ((dir = env_dir("CUDA_HOME"))) {
    add(&p, dir, "/lib64");
    add(&p, dir, "/lib");
  }
  return p.items;
}
