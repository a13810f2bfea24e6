#include "search.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "elf_check.h"
#include "ld_cache.h"
#include "objects.h"

enum { REASON_SIZE = 1024 };

/* The state of one run: the first real refusal, which explains a failed search better than
 * the absences after it. */
typedef struct run {
  const ncshl_search *search;
  ncshl_trail *trail;
  ncshl_found *found;
  ncshl_verdict first_refusal;
  char first_reason[REASON_SIZE];
  int out_of_memory;
} run;

static const ncshl_verdict absent = {NCSHL_ABSENT, 0};

/* A candidate as one-line summaries show it: a very long path keeps its start and end, so
 * that the reason after it still fits in the message (the trail keeps it whole). */
enum { SHOWN_MAX = 400, SHOWN_END = 150 };
static const char *shown(const char *candidate, char *buf, size_t size) {
  size_t length = strlen(candidate);
  if (length <= SHOWN_MAX) return candidate;
  snprintf(buf, size, "%.*s[... %zu characters ...]%s", SHOWN_END, candidate,
           length - 2 * SHOWN_END, candidate + length - SHOWN_END);
  return buf;
}

static ncshl_verdict record(run *r, const char *candidate, ncshl_step step, ncshl_verdict verdict,
                            const char *reason) {
  if (ncshl_trail_add(r->trail, candidate, step, verdict.outcome, verdict.refusal, reason) != 0)
    r->out_of_memory = 1;
  if (verdict.outcome != NCSHL_OK && verdict.outcome != NCSHL_ABSENT &&
      r->first_refusal.outcome == NCSHL_ABSENT) {
    r->first_refusal = verdict;
    char buf[SHOWN_MAX + 64];
    snprintf(r->first_reason, sizeof(r->first_reason), "%s: %s", shown(candidate, buf, sizeof(buf)),
             reason);
  }
  return verdict;
}

/* Offer an open library to `accept`; keep it or close it. */
static ncshl_verdict offer(run *r, void *handle, const char *candidate, ncshl_step step,
                           int preloaded) {
  char reason[REASON_SIZE] = "";
  char *path = ncshl_mapped_path(handle);
  int refusal = r->search->accept(r->search->context, handle, path ? path : candidate, reason,
                                  sizeof(reason));
  if (refusal == 0) {
    char where[2 * REASON_SIZE];
    snprintf(where, sizeof(where), "%s%s%s%s", preloaded ? "already loaded from " : "mapped ",
             path ? path : candidate, reason[0] ? "; " : "", reason);
    *r->found = (ncshl_found){handle, path ? path : strdup(candidate), step, preloaded};
    return record(r, candidate, step, (ncshl_verdict){NCSHL_OK, 0}, where);
  }
  if (path != NULL && strcmp(path, candidate) != 0) {
    size_t used = strlen(reason);
    snprintf(reason + used, sizeof(reason) - used, " (file %s)", path);
  }
  free(path);
  dlclose(handle);
  return record(r, candidate, step, (ncshl_verdict){NCSHL_REFUSED, refusal}, reason);
}

/* 1 when the file at `path` is already mapped in the process. */
static int already_mapped(const char *path) {
  void *handle = ncshl_open_loaded(path);
  if (handle == NULL) return 0;
  dlclose(handle); /* drops only the reference just taken */
  return 1;
}

/* Try one file path: the ELF check first, then (for an override) the caller's check, then
 * dlopen. */
static ncshl_verdict try_file(run *r, const char *path, ncshl_step step) {
  /* A file reached by two steps (a directory in two variables) is tried once. */
  for (size_t i = 0; i < r->trail->count; i++)
    if (strcmp(r->trail->items[i].candidate, path) == 0) return absent;
  char reason[REASON_SIZE];
  ncshl_outcome checked = ncshl_elf_check(path, reason, sizeof(reason));
  if (checked != NCSHL_OK) return record(r, path, step, (ncshl_verdict){checked, 0}, reason);
  int preloaded = already_mapped(path);
  if (!preloaded && step <= NCSHL_STEP_ENVIRONMENT && r->search->before_override != NULL) {
    int refusal = r->search->before_override(r->search->context, path, reason, sizeof(reason));
    if (refusal != 0) return record(r, path, step, (ncshl_verdict){NCSHL_REFUSED, refusal}, reason);
  }
  void *handle = ncshl_open(path, 0, reason, sizeof(reason));
  if (handle == NULL) return record(r, path, step, (ncshl_verdict){NCSHL_UNLOADABLE, 0}, reason);
  return offer(r, handle, path, step, preloaded);
}

/* A caller's path names a file: "libfoo.so" means ./libfoo.so, never a library search. */
static ncshl_verdict try_override(run *r, const char *path, ncshl_step step) {
  if (strchr(path, '/') != NULL) return try_file(r, path, step);
  char *local = malloc(strlen(path) + 3);
  if (local == NULL) return (ncshl_verdict){NCSHL_NO_MEMORY, 0};
  sprintf(local, "./%s", path);
  ncshl_verdict verdict = try_file(r, local, step);
  free(local);
  return verdict;
}

static ncshl_verdict search_overrides(run *r, int *used) {
  const ncshl_search *s = r->search;
  const ncshl_verdict bad_request = {NCSHL_BAD_REQUEST, 0};
  *used = 1;
  if (s->explicit_path != NULL) {
    if (s->explicit_path[0] == '\0')
      return record(r, "(empty path)", NCSHL_STEP_EXPLICIT, bad_request, "the path given is empty");
    return try_override(r, s->explicit_path, NCSHL_STEP_EXPLICIT);
  }
  const char *value = s->env_var ? secure_getenv(s->env_var) : NULL;
  if (value != NULL && value[0] != '\0') {
    if (value[0] != '/') {
      char reason[REASON_SIZE];
      snprintf(reason, sizeof(reason), "%s must be an absolute path", s->env_var);
      return record(r, value, NCSHL_STEP_ENVIRONMENT, bad_request, reason);
    }
    return try_file(r, value, NCSHL_STEP_ENVIRONMENT);
  }
  *used = 0;
  return absent;
}

/* Step 3 beyond the SONAME: another mapped object that defines the identity symbol (a copy
 * under another name, or one linked into the program), reused through its own handle. */
static ncshl_verdict search_mapped(run *r) {
  const ncshl_search *s = r->search;
  ncshl_mapped *objects, *impostors = NULL;
  size_t count, impostor_count = 0;
  ncshl_verdict verdict = absent;
  if (s->identity_symbol == NULL || ncshl_objects_defining(s->identity_symbol, &objects, &count))
    return verdict;
  if (s->impostor_symbol != NULL)
    ncshl_objects_defining(s->impostor_symbol, &impostors, &impostor_count);
  for (size_t i = 0; i < count && verdict.outcome != NCSHL_OK; i++) {
    int impostor = 0;
    for (size_t j = 0; j < impostor_count; j++)
      impostor |= strcmp(impostors[j].path, objects[i].path) == 0;
    if (objects[i].kind != NCSHL_SYMBOL_FUNCTION || impostor) continue;
    void *handle =
        objects[i].is_program ? dlopen(NULL, RTLD_NOW) : ncshl_open_loaded(objects[i].path);
    dlerror();
    if (handle != NULL) verdict = offer(r, handle, objects[i].path, NCSHL_STEP_LOADED, 1);
  }
  ncshl_objects_free(objects, count);
  ncshl_objects_free(impostors, impostor_count);
  return verdict;
}

/* Try `soname` in each directory of a list (freed here) until one is accepted. */
static ncshl_verdict search_dirs(run *r, char **dirs, ncshl_step step) {
  ncshl_verdict verdict = absent;
  for (size_t i = 0; dirs != NULL && dirs[i] != NULL; i++) {
    if (verdict.outcome != NCSHL_OK) {
      size_t length = strlen(dirs[i]) + strlen(r->search->soname) + 2;
      char *path = malloc(length);
      if (path != NULL) {
        snprintf(path, length, "%s/%s", dirs[i], r->search->soname);
        if (try_file(r, path, step).outcome == NCSHL_OK) verdict = (ncshl_verdict){NCSHL_OK, 0};
        free(path);
      } else {
        r->out_of_memory = 1;
      }
    }
    free(dirs[i]);
  }
  free(dirs);
  return verdict;
}

char **ncshl_library_path_dirs(void) {
  const char *value = secure_getenv("LD_LIBRARY_PATH");
  if (value == NULL || value[0] == '\0') return NULL;
  size_t count = 1;
  for (const char *c = value; *c; c++) count += *c == ':' || *c == ';';
  char **dirs = calloc(count + 1, sizeof(char *));
  if (dirs == NULL) return NULL;
  size_t n = 0;
  for (const char *start = value; n < count;) {
    size_t length = strcspn(start, ":;");
    if (length > 0 && start[0] == '/' && memchr(start, '$', length) == NULL)
      dirs[n++] = strndup(start, length);
    if (start[length] == '\0') break;
    start += length + 1;
  }
  return dirs;
}

static ncshl_verdict search_ld_cache(run *r) {
  const ncshl_search *s = r->search;
  char **files = ncshl_ld_cache_lookup(s->ld_cache, s->soname);
  if (files == NULL) {
    r->out_of_memory = 1;
    return absent;
  }
  ncshl_verdict verdict = absent;
  if (files[0] == NULL) {
    char reason[REASON_SIZE];
    snprintf(reason, sizeof(reason), "no %s registered in %s", s->soname, s->ld_cache);
    record(r, s->ld_cache, NCSHL_STEP_LD_CACHE, absent, reason);
  }
  for (size_t i = 0; files[i] != NULL; i++) {
    if (verdict.outcome != NCSHL_OK &&
        try_file(r, files[i], NCSHL_STEP_LD_CACHE).outcome == NCSHL_OK)
      verdict = (ncshl_verdict){NCSHL_OK, 0};
    free(files[i]);
  }
  free(files);
  return verdict;
}

static ncshl_verdict search_places(run *r) {
  const ncshl_search *s = r->search;
  const ncshl_verdict ok = {NCSHL_OK, 0};
  void *handle = ncshl_open_loaded(s->soname);
  if (handle != NULL) {
    if (offer(r, handle, s->soname, NCSHL_STEP_LOADED, 1).outcome == NCSHL_OK) return ok;
  } else {
    record(r, s->soname, NCSHL_STEP_LOADED, absent, "not loaded in this process");
  }
  if (search_mapped(r).outcome == NCSHL_OK) return ok;
  if (s->read_library_path &&
      search_dirs(r, ncshl_library_path_dirs(), NCSHL_STEP_LIBRARY_PATH).outcome == NCSHL_OK)
    return ok;
  if (s->environment != NULL &&
      search_dirs(r, s->environment(), NCSHL_STEP_ACTIVE_ENV).outcome == NCSHL_OK)
    return ok;
  if (s->ld_cache != NULL && search_ld_cache(r).outcome == NCSHL_OK) return ok;

  char reason[REASON_SIZE];
  handle = ncshl_open(s->soname, 0, reason, sizeof(reason));
  if (handle != NULL) {
    if (offer(r, handle, s->soname, NCSHL_STEP_SYSTEM, 0).outcome == NCSHL_OK) return ok;
  } else {
    /* glibc says "cannot open shared object file" both for absence and for a broken file
     * whose name it found; only the former is an absence. */
    ncshl_outcome outcome = strstr(reason, "No such file") ? NCSHL_ABSENT : NCSHL_UNLOADABLE;
    record(r, s->soname, NCSHL_STEP_SYSTEM, (ncshl_verdict){outcome, 0}, reason);
  }
  return s->dirs != NULL ? search_dirs(r, s->dirs(), NCSHL_STEP_PLACE) : absent;
}

/* "libnccl.so.2 was not found; searched: this process, the system loader ..., /opt/x/lib" */
static void describe_not_found(const ncshl_search *search, const ncshl_trail *trail, char *summary,
                               size_t size) {
  int used = snprintf(summary, size, "%s was not found; searched:", search->soname);
  for (size_t i = 0; i < trail->count && used > 0 && (size_t)used < size; i++) {
    const ncshl_attempt *a = &trail->items[i];
    char buf[SHOWN_MAX + 64];
    const char *place = a->step == NCSHL_STEP_LOADED ? "this process (already loaded)"
                        : a->step == NCSHL_STEP_SYSTEM
                            ? "the system loader (LD_LIBRARY_PATH, ld.so cache)"
                        : a->step == NCSHL_STEP_LD_CACHE && a->outcome == NCSHL_ABSENT
                            ? "the ld.so cache"
                            : shown(a->candidate, buf, sizeof(buf));
    used += snprintf(summary + used, size - (size_t)used, "%s %s", i ? "," : "", place);
  }
}

ncshl_verdict ncshl_search_run(const ncshl_search *search, ncshl_trail *trail, ncshl_found *found,
                               char *summary, size_t size) {
  run r = {.search = search, .trail = trail, .found = found, .first_refusal = absent};
  *found = (ncshl_found){0};
  int used_override = 0;
  ncshl_verdict verdict = search_overrides(&r, &used_override);
  if (!used_override) verdict = search_places(&r);
  if (r.out_of_memory) verdict = (ncshl_verdict){NCSHL_NO_MEMORY, 0};

  if (verdict.outcome == NCSHL_OK) {
    snprintf(summary, size, "%s", found->path);
  } else if (used_override && trail->count > 0) {
    const ncshl_attempt *last = &trail->items[trail->count - 1];
    char buf[SHOWN_MAX + 64];
    snprintf(summary, size, "%s: %s", shown(last->candidate, buf, sizeof(buf)), last->reason);
  } else if (r.first_refusal.outcome != NCSHL_ABSENT) {
    verdict = r.first_refusal;
    snprintf(summary, size, "%s", r.first_reason);
  } else {
    describe_not_found(search, trail, summary, size);
  }
  return verdict;
}
