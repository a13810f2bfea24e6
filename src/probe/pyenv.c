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

#include "loader/python_places.h"
#include "inventory.h"

static void env_clear(py_env *e) {
  free(e->prefix);
  for (size_t j = 0; j < e->wheel_count; j++) free(e->wheel_files[j]);
  free(e->wheel_files);
  free(e->conda_lib);
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

/* Adds the environment at `prefix` (its site folders in the order of python_places.h; a
 * conda environment's lib/libnccl.so.2 after its wheels) when it holds anything of NCCL's. */
static void add_env(envs *list, const char *prefix, const char *why, int user_base) {
  char *real = realpath(prefix, NULL);
  if (real == NULL) return;
  for (size_t i = 0; i < list->count; i++) {
    if (strcmp(list->items[i].prefix, real) == 0) {
      free(real);
      return;
    }
  }
  py_env e = {.prefix = real, .why = why};
  ncshl_list sites = {0};
  ncshl_python_sites(real, user_base, &sites);
  int rc = sites.out_of_memory ? -1 : 0;
  for (size_t i = 0; i < sites.count && rc == 0; i++) rc = scan_site(&e, sites.items[i].path);
  ncshl_list_free(&sites);
  if (rc == 0 && !user_base && ncshl_python_is_conda(real)) {
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/lib/libnccl.so.2", real);
    e.conda_lib = realpath(path, NULL); /* not a wheel: its own field */
  }
  if (rc == 0 && (e.wheel_count || e.record_count || e.conda_lib)) {
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

/* The prefix of every python3 on PATH (/opt/venv for /opt/venv/bin/python3; a pyenv shim's
 * interpreter for ~/.pyenv/shims/python3). */
static void add_path_pythons(envs *list) {
  const char *path = secure_getenv("PATH");
  if (path == NULL) return;
  char *copy = strdup(path), *save = NULL;
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
       dir = strtok_r(NULL, ":", &save)) {
    char exe[PATH_MAX], real[PATH_MAX];
    if (dir[0] != '/' || snprintf(exe, sizeof(exe), "%s/python3", dir) >= (int)sizeof(exe) ||
        access(exe, X_OK) != 0)
      continue;
    if (ncshl_python_unshim(exe, real, sizeof(real))) snprintf(exe, sizeof(exe), "%s", real);
    char *bin = strrchr(exe, '/');
    *bin = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL || slash == exe) continue; /* /python3: no prefix */
    *slash = '\0';
    add_env(list, exe, "python3 on PATH", 0);
  }
  free(copy);
}

/* The why of one of python_places' prefixes, as a string that outlives the list. */
static const char *prefix_why(const char *why) {
  if (strcmp(why, "VIRTUAL_ENV") == 0) return "VIRTUAL_ENV";
  if (strcmp(why, "CONDA_PREFIX") == 0) return "CONDA_PREFIX";
  return "the program's prefix";
}

int pyenv_discover(char **pythons, int python_count, py_env **out, size_t *count) {
  envs list = {0};
  ncshl_list prefixes = {0};
  ncshl_python_prefixes(&prefixes);
  for (size_t i = 0; i < prefixes.count; i++)
    add_env(&list, prefixes.items[i].path, prefix_why(prefixes.items[i].why), 0);
  if (prefixes.out_of_memory) list.failed = 1;
  ncshl_list_free(&prefixes);
  for (int i = 0; i < python_count; i++) add_env(&list, pythons[i], "--python", 0);
  add_path_pythons(&list);
  char base[PATH_MAX];
  if (ncshl_python_user_base(base, sizeof(base))) add_env(&list, base, "user site", 1);
  add_env(&list, "/usr", "system packages", 0); /* /usr/local's sites first */
  *out = list.items;
  *count = list.count;
  return list.failed ? -1 : 0;
}

void pyenv_free(py_env *envs, size_t count) {
  for (size_t i = 0; envs != NULL && i < count; i++) env_clear(&envs[i]);
  free(envs);
}
