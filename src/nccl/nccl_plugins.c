/* NCCL's plugins, found as NCCL would find them and read from their files, never loaded. */
#include "ncclshim/nccl_plugins.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "loader/elf_file.h"
#include "loader/locate.h"
#include "src/handle.h"
#include "src/internal.h"

typedef struct plugin_abi {
  ncclshim_plugin_kind kind;
  const char *symbol;
  int primary, first, last;
} plugin_abi;

#define ABI_ROW_(kind, symbol, primary, first, last) \
  {NCCLSHIM_PLUGIN_##kind, symbol, primary, first, last},
static const plugin_abi abis[] = {NCCLSHIM_PLUGIN_ABIS(ABI_ROW_)};
#define ABI_COUNT (sizeof(abis) / sizeof(abis[0]))

#define KIND_NAME_(id, name, variable, library) name,
#define KIND_VARIABLE_(id, name, variable, library) variable,
#define KIND_LIBRARY_(id, name, variable, library) library,
static const char *const kind_names[] = {NCCLSHIM_PLUGIN_KINDS(KIND_NAME_)};
static const char *const kind_variables[] = {NCCLSHIM_PLUGIN_KINDS(KIND_VARIABLE_)};
static const char *const kind_libraries[] = {NCCLSHIM_PLUGIN_KINDS(KIND_LIBRARY_)};

struct ncclshim_plugin_list {
  ncclshim_plugin *items;
  size_t count;
  int out_of_memory;
};

const char *ncclshim_plugin_kind_name(ncclshim_plugin_kind kind) {
  return (unsigned)kind < NCCLSHIM_PLUGIN_KIND_COUNT ? kind_names[kind] : NULL;
}

const char *ncclshim_plugin_verdict_name(ncclshim_plugin_verdict verdict) {
  static const char *const names[] = {"absent", "disabled",  "accepted",   "refused",
                                      "no-abi", "not-found", "unreadable", "unknown"};
  return (unsigned)verdict < sizeof(names) / sizeof(names[0]) ? names[verdict] : NULL;
}

/* The length of the "ncclNetPlugin_v" part of a table-shaped symbol, and its number in *n;
 * 0 when `symbol` does not end in "_v<digits>". */
static size_t split_version(const char *symbol, int *n) {
  const char *v = strrchr(symbol, 'v');
  if (v == NULL || v == symbol || v[-1] != '_' || v[1] == '\0' || strlen(v + 1) > 4) return 0;
  for (const char *d = v + 1; *d; d++)
    if (*d < '0' || *d > '9') return 0;
  *n = atoi(v + 1);
  return (size_t)(v + 1 - symbol);
}

/* The table's row family (same prefix) of `symbol`: its kind, or -1 when no row shares it. */
static int family(const char *symbol, size_t prefix) {
  for (size_t i = 0; i < ABI_COUNT; i++) {
    int n;
    if (split_version(abis[i].symbol, &n) == prefix && strncmp(abis[i].symbol, symbol, prefix) == 0)
      return (int)abis[i].kind;
  }
  return -1;
}

#define CHECKED_(release) release,
static const int checked[] = {NCCLSHIM_PLUGIN_CHECKED_RELEASES(CHECKED_)};
#define CHECKED_COUNT (sizeof(checked) / sizeof(checked[0]))

/* Whether the checked release `release` looks up the symbol of `row` (NULL: a symbol no row
 * names, which no checked release looks up). */
static int looks_up(const plugin_abi *row, int release) {
  return row != NULL && release >= row->first && (row->last == 0 || release <= row->last);
}

int ncclshim_plugin_abi_accepted(const char *symbol, int nccl_version) {
  int n = 0;
  size_t prefix = symbol ? split_version(symbol, &n) : 0;
  int kind = prefix ? family(symbol, prefix) : -1;
  if (kind < 0) return -1;
  if (kind == NCCLSHIM_PLUGIN_PROFILER && nccl_version < NCCLSHIM_PLUGIN_PROFILER_SINCE) return 0;
  if (nccl_version < checked[0]) return -1;
  const plugin_abi *row = NULL;
  int highest = 0;
  for (size_t i = 0; i < ABI_COUNT; i++) {
    int m;
    if (split_version(abis[i].symbol, &m) != prefix || strncmp(abis[i].symbol, symbol, prefix))
      continue;
    if (m > highest) highest = m;
    if (m == n) row = &abis[i];
  }
  size_t below = 0; /* the newest checked release not newer than nccl_version */
  while (below + 1 < CHECKED_COUNT && checked[below + 1] <= nccl_version) below++;
  int then = looks_up(row, checked[below]);
  if (nccl_version == checked[below]) return then;
  if (below + 1 == CHECKED_COUNT) /* newer than every checked release */
    return row == NULL && n > highest ? -1 : then;
  return then == looks_up(row, checked[below + 1]) ? then : -1;
}

/* ---- Reading a plugin file ------------------------------------------------------------------ */

typedef struct scan {
  char exports[512];
  ncclshim_plugin_kind kind;
  int nccl_version;
  int best;        /* the highest accepted primary version of the kind, -1 none */
  char chosen[64]; /* its symbol */
  int any_of_kind; /* a primary symbol of the kind was seen */
  int unknown;     /* one of them could not be judged */
} scan;

static int each_symbol(void *context, const char *name, int is_function) {
  (void)is_function; /* a plugin's ABI symbol is a struct, not a function */
  scan *s = context;
  int n;
  size_t prefix = split_version(name, &n);
  int kind = prefix ? family(name, prefix) : -1;
  if (kind < 0) return 0;
  size_t used = strlen(s->exports);
  snprintf(s->exports + used, sizeof(s->exports) - used, "%s%s", used ? " " : "", name);
  if (kind != (int)s->kind) return 0;
  /* The companions (CollNet, RMA) share no prefix with the primary symbol of their kind. */
  int primary = 0;
  for (size_t i = 0; i < ABI_COUNT; i++) {
    int m;
    if (abis[i].kind == s->kind && abis[i].primary && split_version(abis[i].symbol, &m) == prefix &&
        strncmp(abis[i].symbol, name, prefix) == 0)
      primary = 1;
  }
  if (!primary) return 0;
  s->any_of_kind = 1;
  int accepted = ncclshim_plugin_abi_accepted(name, s->nccl_version);
  if (accepted < 0) s->unknown = 1;
  if (accepted > 0 && n > s->best) {
    s->best = n;
    snprintf(s->chosen, sizeof(s->chosen), "%s", name);
  }
  return 0;
}

static char *dup_or_flag(ncclshim_plugin_list *list, const char *text) {
  char *copy = text ? strdup(text) : NULL;
  if (text != NULL && copy == NULL) list->out_of_memory = 1;
  return copy;
}

static void add(ncclshim_plugin_list *list, ncclshim_plugin_kind kind, const char *requested,
                const char *path, const char *exports, const char *chosen,
                ncclshim_plugin_verdict verdict, const char *reason) {
  ncclshim_plugin *grown = realloc(list->items, (list->count + 1) * sizeof(*grown));
  if (grown == NULL) {
    list->out_of_memory = 1;
    return;
  }
  list->items = grown;
  list->items[list->count++] = (ncclshim_plugin){
      .kind = kind,
      .variable = kind_variables[kind],
      .requested = dup_or_flag(list, requested),
      .path = dup_or_flag(list, path),
      .exports = dup_or_flag(list, exports ? exports : ""),
      .chosen = dup_or_flag(list, chosen),
      .verdict = verdict,
      .reason = dup_or_flag(list, reason),
  };
}

/* "2.28.9, 2.29.7, 2.30.3, 2.30.7": the releases the table was checked against. */
static const char *checked_text(char *text, size_t size) {
  size_t used = 0;
  text[0] = '\0';
  for (size_t i = 0; i < CHECKED_COUNT && used < size; i++) {
    char v[16];
    ncclshim_format_version(checked[i], v, sizeof(v));
    used += (size_t)snprintf(text + used, size - used, "%s%s", i ? ", " : "", v);
  }
  return text;
}

/* Judge the file at `path` for `kind` and add the entry. */
static void judge(ncclshim_plugin_list *list, ncclshim_plugin_kind kind, const char *requested,
                  const char *path, int nccl_version) {
  scan s = {.kind = kind, .nccl_version = nccl_version, .best = -1};
  char why[256] = "", reason[512], have[16], releases[96];
  if (ncshl_elf_exports(path, each_symbol, &s, why, sizeof(why)) != NCSHL_OK) {
    snprintf(reason, sizeof(reason), "not readable as a plugin: %s", why);
    add(list, kind, requested, path, NULL, NULL, NCCLSHIM_PLUGIN_UNREADABLE, reason);
    return;
  }
  ncclshim_format_version(nccl_version, have, sizeof(have));
  ncclshim_plugin_verdict verdict;
  if (!s.any_of_kind) {
    verdict = NCCLSHIM_PLUGIN_NO_ABI;
    snprintf(reason, sizeof(reason), "exports no %s plugin symbol: NCCL ignores it",
             kind_names[kind]);
  } else if (s.best >= 0) {
    verdict = NCCLSHIM_PLUGIN_ACCEPTED;
    snprintf(reason, sizeof(reason), "NCCL %s takes %s", have, s.chosen);
  } else if (s.unknown || nccl_version == 0) {
    verdict = NCCLSHIM_PLUGIN_UNKNOWN;
    if (nccl_version == 0)
      snprintf(reason, sizeof(reason), "no NCCL is loaded to judge it");
    else
      snprintf(reason, sizeof(reason),
               "whether NCCL %s takes these is not known: its plugin lookups were checked "
               "for %s only (docs/plugins.md)",
               have, checked_text(releases, sizeof(releases)));
  } else {
    verdict = NCCLSHIM_PLUGIN_REFUSED;
    snprintf(reason, sizeof(reason),
             "NCCL %s accepts none of its %s versions: it falls back without an error "
             "(only an INFO line says so)",
             have, kind_names[kind]);
  }
  add(list, kind, requested, path, s.exports, s.best >= 0 ? s.chosen : NULL, verdict, reason);
}

/* 1 for a name NCCL also tries as "libnccl-<kind>-<name>.so": not a path, not "lib*.so". */
static int bare_name(const char *name) {
  size_t n = strlen(name);
  if (strchr(name, '/') != NULL) return 0;
  return strncmp(name, "lib", 3) != 0 || n < 3 || strcmp(name + n - 3, ".so") != 0;
}

/* One entry of the variable (or the default name): the files NCCL would try, in its order. */
static void find_one(ncclshim_plugin_list *list, ncclshim_plugin_kind kind, const char *name,
                     int from_variable, int nccl_version) {
  char *path = ncshl_locate(name, ncs_ld_cache_file());
  char alternative[PATH_MAX] = "";
  if (path == NULL && from_variable && bare_name(name)) {
    /* "libnccl-net.so" -> "libnccl-net-<name>.so" */
    snprintf(alternative, sizeof(alternative), "%.*s-%s.so",
             (int)(strlen(kind_libraries[kind]) - 3), kind_libraries[kind], name);
    path = ncshl_locate(alternative, ncs_ld_cache_file());
  }
  if (path != NULL) {
    judge(list, kind, name, path, nccl_version);
    free(path);
    return;
  }
  /* No tuner or profiler library of its own: NCCL looks in the net plugin's library. */
  const ncclshim_plugin *net = list->count > 0 ? &list->items[0] : NULL;
  if ((kind == NCCLSHIM_PLUGIN_TUNER || kind == NCCLSHIM_PLUGIN_PROFILER) && net != NULL &&
      net->kind == NCCLSHIM_PLUGIN_NET && net->path != NULL &&
      strstr(net->exports,
             kind == NCCLSHIM_PLUGIN_TUNER ? "ncclTunerPlugin_v" : "ncclProfiler_v")) {
    char *net_path = strdup(net->path);
    if (net_path == NULL) {
      list->out_of_memory = 1;
      return;
    }
    judge(list, kind, name, net_path, nccl_version);
    free(net_path);
    return;
  }
  char reason[PATH_MAX + 128];
  if (from_variable)
    snprintf(reason, sizeof(reason),
             "%s names '%s', but no file %s%s%s is found: NCCL goes on "
             "without it",
             kind_variables[kind], name, name, alternative[0] ? " or " : "", alternative);
  else
    snprintf(reason, sizeof(reason), "no %s: NCCL uses its own", name);
  add(list, kind, name, NULL, NULL, NULL,
      from_variable ? NCCLSHIM_PLUGIN_NOT_FOUND : NCCLSHIM_PLUGIN_ABSENT, reason);
}

static void find_kind(ncclshim_plugin_list *list, ncclshim_plugin_kind kind, int nccl_version) {
  /* NCCL reads these through its own getenv wrapper; the env plugin itself with getenv. */
  const char *value = getenv(kind_variables[kind]);
  if (value == NULL) {
    find_one(list, kind, kind_libraries[kind], 0, nccl_version);
    return;
  }
  if (strcasecmp(value, "none") == 0 || value[0] == '\0') {
    char reason[96];
    snprintf(reason, sizeof(reason), "%s=%s: NCCL loads none", kind_variables[kind],
             value[0] ? value : "\"\"");
    add(list, kind, value, NULL, NULL, NULL, NCCLSHIM_PLUGIN_DISABLED, reason);
    return;
  }
  int is_list = kind == NCCLSHIM_PLUGIN_NET || kind == NCCLSHIM_PLUGIN_GIN;
  char *copy = strdup(value), *save = NULL;
  if (copy == NULL) {
    list->out_of_memory = 1;
    return;
  }
  for (char *name = is_list ? strtok_r(copy, ",", &save) : copy; name != NULL;
       name = is_list ? strtok_r(NULL, ",", &save) : NULL)
    find_one(list, kind, name, 1, nccl_version);
  free(copy);
}

ncclshim_status ncclshim_nccl_plugins(const ncclshim_nccl *nccl, ncclshim_plugin_list **out) {
  if (out == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_plugins: out is NULL");
  if (nccl == NULL) nccl = ncclshim_nccl_default();
  ncclshim_plugin_list *list = calloc(1, sizeof(*list));
  if (list == NULL) return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_plugins: out of memory");
  int version = ncclshim_nccl_version(nccl);
  for (int kind = 0; kind < NCCLSHIM_PLUGIN_KIND_COUNT; kind++) find_kind(list, kind, version);
  if (list->out_of_memory) {
    ncclshim_plugin_list_free(list);
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_plugins: out of memory");
  }
  *out = list;
  return NCCLSHIM_OK;
}

NCCLSHIM_LIST_ACCESSORS(ncclshim_plugin_list, ncclshim_plugin_list, ncclshim_plugin)

int ncclshim_plugin_list_has_problem(const ncclshim_plugin_list *list) {
  for (size_t i = 0; list != NULL && i < list->count; i++) {
    ncclshim_plugin_verdict v = list->items[i].verdict;
    if (v == NCCLSHIM_PLUGIN_REFUSED || v == NCCLSHIM_PLUGIN_NO_ABI ||
        v == NCCLSHIM_PLUGIN_NOT_FOUND || v == NCCLSHIM_PLUGIN_UNREADABLE)
      return 1;
  }
  return 0;
}

void ncclshim_plugin_list_free(ncclshim_plugin_list *list) {
  if (list == NULL) return;
  for (size_t i = 0; i < list->count; i++) {
    ncclshim_plugin *p = &list->items[i];
    free((char *)p->requested);
    free((char *)p->path);
    free((char *)p->exports);
    free((char *)p->chosen);
    free((char *)p->reason);
  }
  free(list->items);
  free(list);
}
