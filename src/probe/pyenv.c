/* Python environments and their NCCL wheels. A wheel puts libnccl.so.2 under
 * site-packages/nvidia/<name>/lib (nvidia/nccl for the cu12 and cu13 packages alike, so the
 * two overwrite each other; other layouts beside it), and leaves a package record,
 * <package>-<version>.dist-info, which pip writes whichever file won. Both are read here. */
#include <dirent.h>
#include <glob.h>
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
  char pattern[PATH_MAX];
  glob_t g;
  int rc = 0;
  snprintf(pattern, sizeof(pattern), "%s/nvidia/*/lib/libnccl.so.2", site);
  if (glob(pattern, 0, NULL, &g) == 0) {
    /* nvidia/nccl first: the layout the frameworks' loaders look for. */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
      for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        int main_layout = strstr(g.gl_pathv[i], "/nvidia/nccl/lib/") != NULL;
        if (main_layout != (pass == 0)) continue;
        char *real = realpath(g.gl_pathv[i], NULL);
        if (real) rc = add_string(&e->wheel_files, &e->wheel_count, real);
        free(real);
      }
    }
    globfree(&g);
  }
  snprintf(pattern, sizeof(pattern), "%s/nvidia_nccl*.dist-info", site);
  if (rc == 0 && glob(pattern, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) {
      py_wheel_record r;
      const char *base = strrchr(g.gl_pathv[i], '/') + 1;
      if (!parse_record(base, &r)) continue;
      py_wheel_record *grown = realloc(e->records, (e->record_count + 1) * sizeof(*grown));
      if (grown == NULL) {
        rc = -1;
        break;
      }
      e->records = grown;
      e->records[e->record_count++] = r;
    }
    globfree(&g);
  }
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
    static const char *const layouts[] = {"%s/lib/python3*/site-packages",
                                          "%s/lib/python3*/dist-packages",
                                          "%s/lib/python3/dist-packages"};
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]) && rc == 0; l++) {
      char pattern[PATH_MAX];
      glob_t g;
      snprintf(pattern, sizeof(pattern), layouts[l], real);
      if (glob(pattern, GLOB_ONLYDIR, NULL, &g) != 0) continue;
      for (size_t i = g.gl_pathc; i-- > 0 && rc == 0;) /* newest Python first */
        rc = scan_site(&e, g.gl_pathv[i]);
      globfree(&g);
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
    char pattern[PATH_MAX];
    glob_t g;
    snprintf(pattern, sizeof(pattern), "%s/.local/lib/python3*/site-packages", dir);
    if (glob(pattern, GLOB_ONLYDIR, NULL, &g) == 0) {
      for (size_t i = g.gl_pathc; i-- > 0;) add_env(&list, g.gl_pathv[i], "user site", 1);
      globfree(&g);
    }
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
