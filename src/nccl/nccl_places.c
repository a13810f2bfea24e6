/* The directories of the NCCL search's two directory steps (docs/loader.md, "Search order").
 * The active environment (ACTIVE_ENV), searched before the ld.so cache, in this order:
 *   1. VIRTUAL_ENV's wheels;
 *   2. CONDA_PREFIX/lib, then its wheels (pip inside conda);
 *   3. the prefix of the path the program was started by (argv[0], through PATH when it has
 *      no '/'): /opt/venv for /opt/venv/bin/python3 even when that is a symlink to the base
 *      interpreter, so an unactivated venv is found;
 *   4. the prefix of the program's file (/proc/self/exe, symlinks resolved);
 *   5. the user site (PYTHONUSERBASE, else ~/.local), where `pip install --user` puts wheels.
 * A prefix's wheels are <prefix>/lib/python3.N/site-packages/nvidia/nccl/lib for every N
 * (newest first), then Debian's dist-packages: python3.N/dist-packages, python3/dist-packages
 * (for /usr, /usr/local's first, where Debian's pip puts them). Steps 3 and 5 are skipped in a
 * setuid or otherwise secure process (AT_SECURE): argv[0], PATH and HOME are the caller's.
 * The well-known places (WELL_KNOWN), after the system loader: NCCL_HOME/lib,
 * CUDA_HOME/lib64, CUDA_HOME/lib. */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "nccl_handle.h"

/* An absolute directory from the environment, or NULL: relative values are ignored so that
 * nothing is searched relative to the current directory. */
static const char *env_dir(const char *name) {
  const char *value = secure_getenv(name);
  return value != NULL && value[0] == '/' ? value : NULL;
}

static int newest_first(const void *a, const void *b) {
  return strverscmp(*(const char *const *)b, *(const char *const *)a);
}

/* The python3.N directories of <prefix>/lib, newest first (malloc'd names; *count of them). */
static char **python_dirs(const char *prefix, size_t *count) {
  *count = 0;
  char lib[PATH_MAX];
  if (snprintf(lib, sizeof(lib), "%s/lib", prefix) >= (int)sizeof(lib)) return NULL;
  DIR *dir = opendir(lib);
  if (dir == NULL) return NULL;
  char **names = NULL;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (strncmp(entry->d_name, "python3.", 8) != 0) continue;
    char **grown = realloc(names, (*count + 1) * sizeof(char *));
    if (grown == NULL) break;
    names = grown;
    if ((names[*count] = strdup(entry->d_name)) != NULL) ++*count;
  }
  closedir(dir);
  if (*count > 1) qsort(names, *count, sizeof(names[0]), newest_first);
  return names;
}

/* Every wheel directory of one prefix, in the order of the header comment. */
static void add_prefix(ncshl_list *dirs, const char *prefix, const char *why) {
  if (strcmp(prefix, "/usr") == 0) add_prefix(dirs, "/usr/local", why);
  static const char *const kinds[] = {"site-packages", "dist-packages"};
  size_t count;
  char **names = python_dirs(prefix, &count);
  for (size_t k = 0; k < 2; k++) {
    for (size_t i = 0; i < count; i++) {
      char sub[NAME_MAX + 64], kind_dir[PATH_MAX];
      /* dist-packages only where Debian made one, so a venv's list stays its own */
      if (k == 1 && (snprintf(kind_dir, sizeof(kind_dir), "%s/lib/%s/%s", prefix, names[i],
                              kinds[k]) >= (int)sizeof(kind_dir) ||
                     access(kind_dir, F_OK) != 0))
        continue;
      snprintf(sub, sizeof(sub), "/lib/%s/%s/nvidia/nccl/lib", names[i], kinds[k]);
      ncshl_list_add2(dirs, prefix, sub, why);
    }
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  char debian[PATH_MAX]; /* Debian's version-less directory, where it exists */
  if (snprintf(debian, sizeof(debian), "%s/lib/python3", prefix) < (int)sizeof(debian) &&
      access(debian, F_OK) == 0)
    ncshl_list_add2(dirs, prefix, "/lib/python3/dist-packages/nvidia/nccl/lib", why);
}

/* The prefix of a program path: /opt/venv for /opt/venv/bin/python3. Only the directory is
 * resolved (realpath), never the program's own name, which may be a symlink to elsewhere. */
static int program_prefix(const char *program, char *prefix, size_t size) {
  char copy[PATH_MAX], dir[PATH_MAX];
  if (snprintf(copy, sizeof(copy), "%s", program) >= (int)sizeof(copy)) return 0;
  if (realpath(dirname(copy), dir) == NULL) return 0;
  const char *parent = dirname(dir);
  if (strcmp(parent, "/") == 0 || strcmp(parent, ".") == 0) return 0;
  return snprintf(prefix, size, "%s", parent) < (int)size;
}

/* argv[0] as the program was started (glibc keeps it; /proc/self/cmdline would name ld.so
 * for a program started through it). */
static const char *started_as(void) {
  extern char *program_invocation_name;
  return program_invocation_name;
}

/* The file `name` (no '/') runs as through PATH, the way a shell finds it: the first
 * executable in a directory of PATH. */
static int through_path(const char *name, char *found, size_t size) {
  const char *path = secure_getenv("PATH");
  for (const char *start = path; start != NULL && *start != '\0';) {
    size_t length = strcspn(start, ":");
    if (length > 0 && start[0] == '/' &&
        snprintf(found, size, "%.*s/%s", (int)length, start, name) < (int)size &&
        access(found, X_OK) == 0)
      return 1;
    start += length + (start[length] != '\0');
  }
  return 0;
}

static void add_started_prefix(ncshl_list *dirs) {
  const char *argv0 = started_as();
  char program[PATH_MAX], prefix[PATH_MAX], why[PATH_MAX + 64];
  if (argv0 == NULL || argv0[0] == '\0') return;
  if (strchr(argv0, '/') != NULL) {
    if (snprintf(program, sizeof(program), "%s", argv0) >= (int)sizeof(program)) return;
  } else if (!through_path(argv0, program, sizeof(program))) {
    return;
  }
  if (!program_prefix(program, prefix, sizeof(prefix))) return;
  snprintf(why, sizeof(why), "the prefix of the program as started (%s)", program);
  add_prefix(dirs, prefix, why);
}

static void add_exe_prefix(ncshl_list *dirs) {
  char exe[PATH_MAX], prefix[PATH_MAX], why[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  if (!program_prefix(exe, prefix, sizeof(prefix))) return;
  snprintf(why, sizeof(why), "the prefix of the program's file (%s)", exe);
  add_prefix(dirs, prefix, why);
}

/* `pip install --user`: PYTHONUSERBASE, else $HOME/.local; lib/python3.N/site-packages. */
static void add_user_site(ncshl_list *dirs) {
  char base[PATH_MAX];
  const char *dir = env_dir("PYTHONUSERBASE");
  if (dir != NULL) {
    snprintf(base, sizeof(base), "%s", dir);
  } else if ((dir = env_dir("HOME")) == NULL ||
             snprintf(base, sizeof(base), "%s/.local", dir) >= (int)sizeof(base)) {
    return;
  }
  size_t count;
  char **names = python_dirs(base, &count);
  for (size_t i = 0; i < count; i++) {
    char sub[NAME_MAX + 64];
    snprintf(sub, sizeof(sub), "/lib/%s/site-packages/nvidia/nccl/lib", names[i]);
    ncshl_list_add2(dirs, base, sub, "the user site (pip install --user)");
    free(names[i]);
  }
  free(names);
}

void ncclshim_nccl_environment_places(ncshl_list *dirs) {
  const char *dir;
  if ((dir = env_dir("VIRTUAL_ENV"))) add_prefix(dirs, dir, "VIRTUAL_ENV");
  if ((dir = env_dir("CONDA_PREFIX"))) {
    ncshl_list_add2(dirs, dir, "/lib", "CONDA_PREFIX");
    add_prefix(dirs, dir, "CONDA_PREFIX"); /* pip inside a conda environment */
  }
  int secure = getauxval(AT_SECURE) != 0;
  if (!secure) add_started_prefix(dirs);
  add_exe_prefix(dirs);
  if (!secure) add_user_site(dirs);
}

void ncclshim_nccl_places(ncshl_list *dirs) {
  const char *dir;
  if ((dir = env_dir("NCCL_HOME"))) ncshl_list_add2(dirs, dir, "/lib", "NCCL_HOME");
  if ((dir = env_dir("CUDA_HOME"))) {
    ncshl_list_add2(dirs, dir, "/lib64", "CUDA_HOME");
    ncshl_list_add2(dirs, dir, "/lib", "CUDA_HOME");
  }
}
