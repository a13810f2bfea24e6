/* Python environments and their NCCL wheels. A wheel puts libnccl.so.2 under
 * site-packages/nvidia/<name>/lib (nvidia/nccl for the cu12 and cu13 packages alike, so the
 * two overwrite each other; other layouts beside it), and leaves a package record,
 * <package>-<version>.dist-info, which pip writes whichever file won. Both are read here. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inventory.h"

static void env_clear(py_env *e) {
  free(e->prefix);
  for (size_t j = 0; j < e->wheel_count; j++) free(e->wheel_files[j]);
  free(e->wheel_files);
  free(e->records);
}

typedef struct envs {
  py_env *items;
  size_t count;
  int failed;
} envs;

static int add_string(char ***list, size_t *count, const char *text) {
  for (size_t i = 0; i < *count; i++)
    if (strcmp((*list)[i], text) == 0) return 0;
  char **grown = realloc(*list, (*count + 1) * sizeof(char *));
  if (grown == NULL) return -1;
  *list = grown;
  if ((grown[*count] = strdup(text)) == NULL) return -1;
  (*count)++;
  return 0;
}

static int by_version(const void *a, const void *b) {
  return strverscmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names in `dir` that start with `prefix` and end with `suffix`, in version order
 * (python3.9 before python3.12), NULL-terminated; NULL when none or unreadable. Not glob(3):
 * its current symbol version is newer than the glibc 2.17 baseline of the shipped probe. */
static char **list_dir(const char *dir, const char *prefix, const char *suffix) {
  DIR *d = opendir(dir);
  if (d == NULL) return NULL;
  char **names = NULL;
  size_t count = 0, plen = strlen(prefix), slen = strlen(suffix);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < plen + slen || strncmp(e->d_name, prefix, plen) != 0 ||
        strcmp(e->d_name + len - slen, suffix) != 0 || e->d_name[0] == '.')
      continue;
    char **grown = realloc(names, (count + 2) * sizeof(char *));
    if (grown == NULL) break;
    names = grown;
    if ((names[count] = strdup(e->d_name)) != NULL) names[++count] = NULL;
  }
  closedir(d);
  if (count > 1) qsort(names, count, sizeof(char *), by_version);
  return names;
}

static void free_names(char **names) {
  for (size_t i = 0; names != NULL && names[i] != NULL; i++) free(names[i]);
  free(names);
}

/* "nvidia_nccl_cu12-2.27.3.dist-info" into a record; 0 when the name is not an NCCL wheel's. */
static int parse_record(const char *base, py_wheel_record *r) {
  static const char prefix[] = "nvidia_nccl";
  size_t len = strlen(base), tail = strlen(".dist-info");
  if (strncmp(base, prefix, sizeof(prefix) - 1) != 0 || len <= tail ||
      strcmp(base + len - tail, ".dist-info") != 0)
    return 0;
  const char *dash = strchr(base, '-');
  if (dash == NULL || (size_t)(dash - base) >= sizeof(r->name)) return 0;
  snprintf(r->name, sizeof(r->name), "%.*s", (int)(dash - base), base);
  for (char *c = r->name; *c; c++)
    if (*c == '_') *c = '-';
  snprintf(r->version, sizeof(r->version), "%.*s", (int)(len - tail - (size_t)(dash + 1 - base)),
           dash + 1);
  return 1;
}

/* The NCCL wheel files and records of one site-packages folder into e. */
static int scan_site(py_env *e, const char *site) {
  char path[PATH_MAX];
  int rc = 0;
  snprintf(path, sizeof(path), "%s/nvidia", site);
  char **dirs = list_dir(path, "", "");
  /* nvidia/nccl first: the layout the frameworks' loaders look for. */
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    for (size_t i = 0; dirs != NULL && dirs[i] != NULL && rc == 0; i++) {
      if ((strcmp(dirs[i], "nccl") == 0) != (pass == 0)) continue;
      snprintf(path, sizeof(path), "%s/nvidia/%s/lib/libnccl.so.2", site, dirs[i]);
      char *real = realpath(path, NULL);
      if (real) rc = add_string(&e->wheel_files, &e->wheel_count, real);
      free(real);
    }
  }
  free_names(dirs);
  char **records = rc == 0 ? list_dir(site, "nvidia_nccl", ".dist-info") : NULL;
  for (size_t i = 0; records != NULL && records[i] != NULL; i++) {
    py_wheel_record r;
    if (!parse_record(records[i], &r)) continue;
    py_wheel_record *grown = realloc(e->records, (e->record_count + 1) * sizeof(*grown));
    if (grown == NULL) {
      rc = -1;
      break;
    }
    e->records = grown;
    e->records[e->record_count++] = r;
  }
  free_names(records);
  return rc;
}

/* Each <lib>/python3*\/<folder> (site-packages, dist-packages) of a prefix, newest first. */
static int scan_lib(py_env *e, const char *lib, const char *folder) {
  char **pythons = list_dir(lib, "python3", "");
  size_t n = 0;
  int rc = 0;
  while (pythons != NULL && pythons[n] != NULL) n++;
  for (size_t i = n; i-- > 0 && rc == 0;) {
    char site[PATH_MAX];
    snprintf(site, sizeof(site), "%s/%s/%s", lib, pythons[i], folder);
    DIR *d = opendir(site);
    if (d == NULL) continue;
    closedir(d);
    rc = scan_site(e, site);
  }
  free_names(pythons);
  return rc;
}

/* Adds the environment at `prefix` (its lib/python3.*\/{site,dist}-packages folders, or
 * `prefix` itself when site_itself) when it holds anything of NCCL's. */
static void add_env(envs *list, const char *prefix, const char *why, int site_itself) {
  char *real = realpath(prefix, NULL);
  if (real == NULL) return;
  for (size_t i = 0; i < list->count; i++) {
    if (strcmp(list->items[i].prefix, real) == 0) {
      free(real);
      return;
    }
  }
  py_env e = {.prefix = real, .why = why};
  int rc = 0;
  if (site_itself) {
    rc = scan_site(&e, real);
  } else {
    char lib[PATH_MAX];
    snprintf(lib, sizeof(lib), "%s/lib", real);
    rc = scan_lib(&e, lib, "site-packages");
    if (rc == 0) rc = scan_lib(&e, lib, "dist-packages"); /* Debian's; python3/ included */
    /* A conda environment (it has conda-meta/) installs NCCL as <prefix>/lib/libnccl.so.2,
     * which its packages' RUNPATH names: after the wheels, as pip inside conda comes later. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/conda-meta", real);
    DIR *conda = rc == 0 ? opendir(path) : NULL;
    if (conda != NULL) {
      closedir(conda);
      snprintf(path, sizeof(path), "%s/libnccl.so.2", lib);
      char *file = realpath(path, NULL);
      if (file) rc = add_string(&e.wheel_files, &e.wheel_count, file);
      free(file);
    }
  }
  if (rc == 0 && (e.wheel_count || e.record_count)) {
    py_env *grown = realloc(list->items, (list->count + 1) * sizeof(*grown));
    if (grown != NULL) {
      list->items = grown;
      list->items[list->count++] = e;
      return;
    }
    rc = -1;
  }
  if (rc != 0) list->failed = 1;
  env_clear(&e);
}

/* The prefix of every python3 on PATH (/opt/venv for /opt/venv/bin/python3). */
static void add_path_pythons(envs *list) {
  const char *path = secure_getenv("PATH");
  if (path == NULL) return;
  char *copy = strdup(path), *save = NULL;
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
       dir = strtok_r(NULL, ":", &save)) {
    char exe[PATH_MAX];
    if (dir[0] != '/' || snprintf(exe, sizeof(exe), "%s/python3", dir) >= (int)sizeof(exe) ||
        access(exe, X_OK) != 0)
      continue;
    char *slash = strrchr(dir, '/');
    if (slash == dir) continue; /* /python3: no prefix */
    *slash = '\0';
    add_env(list, dir, "python3 on PATH", 0);
  }
  free(copy);
}

int pyenv_discover(char **pythons, int python_count, py_env **out, size_t *count) {
  envs list = {0};
  const char *dir;
  if ((dir = secure_getenv("VIRTUAL_ENV")) && dir[0] == '/') add_env(&list, dir, "VIRTUAL_ENV", 0);
  if ((dir = secure_getenv("CONDA_PREFIX")) && dir[0] == '/')
    add_env(&list, dir, "CONDA_PREFIX", 0);
  for (int i = 0; i < python_count; i++) add_env(&list, pythons[i], "--python", 0);
  add_path_pythons(&list);
  if ((dir = secure_getenv("HOME")) && dir[0] == '/') { /* secure_getenv: none when setuid */
    char lib[PATH_MAX];
    snprintf(lib, sizeof(lib), "%s/.local/lib", dir);
    char **pythons = list_dir(lib, "python3", "");
    size_t n = 0;
    while (pythons != NULL && pythons[n] != NULL) n++;
    for (size_t i = n; i-- > 0;) {
      char site[PATH_MAX];
      snprintf(site, sizeof(site), "%s/%s/site-packages", lib, pythons[i]);
      add_env(&list, site, "user site", 1);
    }
    free_names(pythons);
  }
  add_env(&list, "/usr", "system packages", 0);
  add_env(&list, "/usr/local", "system packages", 0);
  *out = list.items;
  *count = list.count;
  return list.failed ? -1 : 0;
}

void pyenv_free(py_env *envs, size_t count) {
  for (size_t i = 0; envs != NULL && i < count; i++) env_clear(&envs[i]);
  free(envs);
}
