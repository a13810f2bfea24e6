#include "python_places.h"

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

/* An absolute directory from the environment, or NULL: relative values are ignored so that
 * nothing is searched relative to the current directory. */
static const char *env_dir(const char *name) {
  const char *value = secure_getenv(name);
  return value != NULL && value[0] == '/' ? value : NULL;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
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

void ncshl_python_sites(const char *prefix, int user_base, ncshl_list *sites) {
  if (!user_base && strcmp(prefix, "/usr") == 0) ncshl_python_sites("/usr/local", 0, sites);
  static const char *const kinds[] = {"site-packages", "dist-packages"};
  size_t count;
  char **names = python_dirs(prefix, &count);
  for (size_t k = 0; k < (user_base ? 1u : 2u); k++) {
    for (size_t i = 0; i < count; i++) {
      char site[PATH_MAX];
      if (snprintf(site, sizeof(site), "%s/lib/%s/%s", prefix, names[i], kinds[k]) >=
          (int)sizeof(site))
        continue;
      /* dist-packages only where Debian made one, so a venv's list stays its own */
      if (k == 1 && !is_dir(site)) continue;
      ncshl_list_add(sites, site, NULL);
    }
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
  char debian[PATH_MAX]; /* Debian's version-less directory, where it exists */
  if (!user_base &&
      snprintf(debian, sizeof(debian), "%s/lib/python3/dist-packages", prefix) <
          (int)sizeof(debian) &&
      is_dir(debian))
    ncshl_list_add(sites, debian, NULL);
}

int ncshl_python_is_conda(const char *prefix) {
  char meta[PATH_MAX];
  const char *conda = env_dir("CONDA_PREFIX");
  return (conda != NULL && strcmp(conda, prefix) == 0) ||
         (snprintf(meta, sizeof(meta), "%s/conda-meta", prefix) < (int)sizeof(meta) &&
          is_dir(meta));
}

/* The first line of a file (a pyenv version name) into `out`; 0 when unreadable or empty. */
static int first_line(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "re");
  if (f == NULL) return 0;
  int ok = fgets(out, (int)size, f) != NULL;
  fclose(f);
  if (ok) out[strcspn(out, " \t\r\n:")] = '\0';
  return ok && out[0] != '\0';
}

/* The version a pyenv shim runs: PYENV_VERSION, a .python-version in the current directory
 * or above, else <root>/version. */
static int pyenv_version(const char *root, char *version, size_t size) {
  const char *env = secure_getenv("PYENV_VERSION");
  if (env != NULL && env[0] != '\0') {
    snprintf(version, size, "%.*s", (int)strcspn(env, ":"), env);
    return 1;
  }
  char dir[PATH_MAX], file[PATH_MAX + 32];
  if (getcwd(dir, sizeof(dir)) != NULL) {
    for (;;) {
      snprintf(file, sizeof(file), "%s/.python-version", dir);
      if (first_line(file, version, size)) return 1;
      char *slash = strrchr(dir, '/');
      if (slash == NULL || strcmp(dir, "/") == 0) break;
      slash[slash == dir] = '\0'; /* the parent; "/" keeps its slash */
    }
  }
  snprintf(file, sizeof(file), "%s/version", root);
  return first_line(file, version, size);
}

int ncshl_python_unshim(const char *program, char *real, size_t size) {
  char copy[PATH_MAX], root[PATH_MAX], version[256], versions[PATH_MAX + 16];
  if (snprintf(copy, sizeof(copy), "%s", program) >= (int)sizeof(copy)) return 0;
  const char *name = strrchr(program, '/');
  if (name == NULL) return 0;
  char *shims = dirname(copy);
  const char *base = strrchr(shims, '/');
  if (base == NULL || strcmp(base + 1, "shims") != 0) return 0;
  snprintf(root, sizeof(root), "%s", dirname(shims));
  snprintf(versions, sizeof(versions), "%s/versions", root);
  if (!is_dir(versions) || !pyenv_version(root, version, sizeof(version)) ||
      strcmp(version, "system") == 0 || strchr(version, '/') != NULL)
    return 0;
  return snprintf(real, size, "%s/%s/bin%s", versions, version, name) < (int)size &&
         access(real, X_OK) == 0;
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

/* 1 when pyvenv.cfg lies in the program's directory or the one above it, where Python looks
 * for it (site.py, PEP 405). */
static int venv_config_near(const char *program) {
  char copy[PATH_MAX], cfg[PATH_MAX + 16];
  if (snprintf(copy, sizeof(copy), "%s", program) >= (int)sizeof(copy)) return 0;
  char *dir = dirname(copy);
  snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", dir);
  if (access(cfg, F_OK) == 0) return 1;
  snprintf(cfg, sizeof(cfg), "%s/../pyvenv.cfg", dir);
  return access(cfg, F_OK) == 0;
}

/* argv[0] as the program was started (glibc keeps it; /proc/self/cmdline would name ld.so
 * for a program started through it). */
/* The prefix of the program as started into `prefix` and its path into `program`; 0 when
 * unknown. */
static int started_prefix(char *program, char *prefix) {
  extern char *program_invocation_name;
  const char *argv0 = program_invocation_name;
  char real[PATH_MAX];
  if (argv0 == NULL || argv0[0] == '\0') return 0;
  if (strchr(argv0, '/') != NULL) {
    if (snprintf(program, PATH_MAX, "%s", argv0) >= PATH_MAX) return 0;
  } else if (!through_path(argv0, program, PATH_MAX)) {
    return 0;
  }
  if (ncshl_python_unshim(program, real, sizeof(real))) snprintf(program, PATH_MAX, "%s", real);
  /* Python takes the prefix of the program as started only in a venv (a pyvenv.cfg beside
   * it or one directory up); otherwise it follows the program's symlinks and imports from
   * the prefix of the file they lead to, and so does the search. */
  if (!venv_config_near(program) && realpath(program, real) != NULL)
    snprintf(program, PATH_MAX, "%s", real);
  return program_prefix(program, prefix, PATH_MAX);
}

/* 1 when `prefix` is a virtual environment (it has pyvenv.cfg) other than `dir`. */
static int other_venv(const char *prefix, const char *dir) {
  char cfg[PATH_MAX + 16], a[PATH_MAX], b[PATH_MAX];
  snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", prefix);
  return access(cfg, F_OK) == 0 && realpath(prefix, a) && realpath(dir, b) && strcmp(a, b) != 0;
}

static void add_exe_prefix(ncshl_list *prefixes) {
  char exe[PATH_MAX], prefix[PATH_MAX], why[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  if (!program_prefix(exe, prefix, sizeof(prefix))) return;
  snprintf(why, sizeof(why), "the prefix of the program's file (%s)", exe);
  ncshl_list_add(prefixes, prefix, why);
}

void ncshl_python_prefixes(ncshl_list *prefixes) {
  int secure = getauxval(AT_SECURE) != 0;
  char program[PATH_MAX], started[PATH_MAX], why[PATH_MAX + 64];
  int have_started = !secure && started_prefix(program, started);
  const char *dir = env_dir("VIRTUAL_ENV");
  /* A VIRTUAL_ENV left from another venv than the one the program runs from is stale: the
   * interpreter of that other venv loads its own wheels. */
  if (dir && !(have_started && other_venv(started, dir)))
    ncshl_list_add(prefixes, dir, "VIRTUAL_ENV");
  if ((dir = env_dir("CONDA_PREFIX"))) ncshl_list_add(prefixes, dir, "CONDA_PREFIX");
  if (have_started) {
    snprintf(why, sizeof(why), "the prefix of the program as started (%s)", program);
    ncshl_list_add(prefixes, started, why);
  }
  add_exe_prefix(prefixes);
}

int ncshl_python_user_base(char *base, size_t size) {
  if (getauxval(AT_SECURE) != 0) return 0;
  const char *dir = env_dir("PYTHONUSERBASE");
  if (dir != NULL) return snprintf(base, size, "%s", dir) < (int)size;
  return (dir = env_dir("HOME")) != NULL && snprintf(base, size, "%s/.local", dir) < (int)size;
}
