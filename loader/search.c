#include "search.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dl.h"
#include "elf_check.h"
#include "hwcaps.h"
#include "ld_cache.h"
#include "library_path.h"
#include "load_blocks.h"
#include "objects.h"

enum { REASON_SIZE = 1024, SUMMARY_SIZE = 2048 };

/* ---- The candidates of each step (both walks) ---------------------------------------- */

static int add(ncshl_candidates *out, const char *path, ncshl_step step, ncshl_reach reach,
               ncshl_outcome outcome, const char *reason) {
  ncshl_candidate *grown = realloc(out->items, (out->count + 1) * sizeof(*grown));
  if (grown == NULL) return -1;
  out->items = grown;
  ncshl_candidate c = {strdup(path), step, reach, outcome, strdup(reason)};
  if (c.path == NULL || c.reason == NULL) {
    free(c.path);
    free(c.reason);
    return -1;
  }
  out->items[out->count++] = c;
  return 0;
}

/* The SONAME in each directory of the list; with none, a note of why. */
static int add_dirs(const ncshl_search *s, ncshl_step step, ncshl_places_fn places,
                    ncshl_candidates *out) {
  ncshl_list dirs = {0};
  places(&dirs);
  int rc = dirs.out_of_memory ? -1 : 0;
  if (rc == 0 && dirs.count == 0)
    rc = add(out, s->soname, step, NCSHL_REACH_NONE, NCSHL_ABSENT,
             dirs.none ? dirs.none : "no directory to look in");
  const char *levels[4];
  size_t level_count = ncshl_hwcaps_levels(levels, sizeof(levels) / sizeof(levels[0]));
  for (size_t i = 0; i < dirs.count && rc == 0; i++) {
    /* The loader takes <dir>/glibc-hwcaps/<level>/<soname> first, for each level this CPU
     * reaches: so does the search, where there is such a file. */
    for (size_t l = 0; l <= level_count && rc == 0; l++) {
      char path[PATH_MAX], why[REASON_SIZE];
      struct stat st;
      if (l < level_count) {
        if (snprintf(path, sizeof(path), "%s/glibc-hwcaps/%s/%s", dirs.items[i].path, levels[l],
                     s->soname) >= (int)sizeof(path) ||
            stat(path, &st) != 0)
          continue;
        snprintf(why, sizeof(why),
                 "%s, its glibc-hwcaps/%s (the loader's first choice there on "
                 "this CPU)",
                 dirs.items[i].why, levels[l]);
        rc = add(out, path, step, NCSHL_REACH_FILE, NCSHL_OK, why);
        continue;
      }
      size_t length = strlen(dirs.items[i].path) + strlen(s->soname) + 2;
      char *file = malloc(length);
      if (file == NULL) {
        rc = -1;
        break;
      }
      snprintf(file, length, "%s/%s", dirs.items[i].path, s->soname);
      rc = add(out, file, step, NCSHL_REACH_FILE, NCSHL_OK, dirs.items[i].why);
      free(file);
    }
  }
  ncshl_list_free(&dirs);
  return rc;
}

static int add_explicit(const ncshl_search *s, ncshl_candidates *out) {
  const char *path = s->explicit_path;
  if (path == NULL) return 0;
  if (path[0] == '\0')
    return add(out, "(empty path)", NCSHL_STEP_EXPLICIT, NCSHL_REACH_NONE, NCSHL_BAD_REQUEST,
               "the path given is empty");
  if (strchr(path, '/') != NULL)
    return add(out, path, NCSHL_STEP_EXPLICIT, NCSHL_REACH_FILE, NCSHL_OK, "the path given");
  /* A caller's path names a file: "libfoo.so" means ./libfoo.so, never a library search. */
  char *local = malloc(strlen(path) + 3);
  if (local == NULL) return -1;
  sprintf(local, "./%s", path);
  int rc = add(out, local, NCSHL_STEP_EXPLICIT, NCSHL_REACH_FILE, NCSHL_OK, "the path given");
  free(local);
  return rc;
}

static int add_environment(const ncshl_search *s, ncshl_candidates *out) {
  const char *value = s->env_var ? secure_getenv(s->env_var) : NULL;
  if (value == NULL || value[0] == '\0') return 0; /* empty means unset */
  char why[REASON_SIZE];
  if (value[0] != '/') {
    snprintf(why, sizeof(why), "%s must be an absolute path", s->env_var);
    return add(out, value, NCSHL_STEP_ENVIRONMENT, NCSHL_REACH_NONE, NCSHL_BAD_REQUEST, why);
  }
  snprintf(why, sizeof(why), "the value of %s", s->env_var);
  return add(out, value, NCSHL_STEP_ENVIRONMENT, NCSHL_REACH_FILE, NCSHL_OK, why);
}

/* The SONAME if mapped, then every other mapped object that defines the identity symbol (a
 * copy under another name, or one linked into the program) and not the impostor's. */
static int add_preloaded(const ncshl_search *s, ncshl_candidates *out) {
  int rc = 0;
  void *handle = ncshl_open_loaded(s->soname);
  if (handle != NULL) {
    char *file = ncshl_mapped_path(handle);
    dlclose(handle); /* drops only the reference just taken */
    char why[REASON_SIZE];
    snprintf(why, sizeof(why), "mapped in this process as %s", file ? file : s->soname);
    free(file);
    rc = add(out, s->soname, NCSHL_STEP_PRELOADED, NCSHL_REACH_MAPPED, NCSHL_OK, why);
  } else {
    rc = add(out, s->soname, NCSHL_STEP_PRELOADED, NCSHL_REACH_NONE, NCSHL_ABSENT,
             "not loaded in this process");
  }
  ncshl_mapped *objects, *impostors = NULL;
  size_t count, impostor_count = 0;
  if (rc != 0 || s->identity_symbol == NULL) return rc;
  if (ncshl_objects_defining(s->identity_symbol, &objects, &count) != 0) return -1;
  if (s->impostor_symbol != NULL &&
      ncshl_objects_defining(s->impostor_symbol, &impostors, &impostor_count) != 0)
    rc = -1;
  char why[REASON_SIZE];
  snprintf(why, sizeof(why), "mapped in this process, defines %s", s->identity_symbol);
  for (size_t i = 0; i < count && rc == 0; i++) {
    int impostor = 0;
    for (size_t j = 0; j < impostor_count; j++)
      impostor |= strcmp(impostors[j].path, objects[i].path) == 0;
    if (objects[i].kind != NCSHL_SYMBOL_FUNCTION || impostor) continue;
    rc = add(out, objects[i].path, NCSHL_STEP_PRELOADED,
             objects[i].is_program ? NCSHL_REACH_PROGRAM : NCSHL_REACH_MAPPED, NCSHL_OK,
             objects[i].is_program ? "linked into the program" : why);
  }
  ncshl_objects_free(objects, count);
  ncshl_objects_free(impostors, impostor_count);
  return rc;
}

static int add_ld_cache(const ncshl_search *s, ncshl_candidates *out) {
  if (s->ld_cache == NULL) return 0;
  ncshl_list files = {0};
  int rc = ncshl_ld_cache_lookup(s->ld_cache, s->soname, &files);
  if (rc == 0 && files.count == 0) {
    char why[REASON_SIZE];
    snprintf(why, sizeof(why), "no %s registered in %s", s->soname, s->ld_cache);
    rc = add(out, s->ld_cache, NCSHL_STEP_LD_CACHE, NCSHL_REACH_NONE, NCSHL_ABSENT, why);
  }
  for (size_t i = 0; i < files.count && rc == 0; i++)
    rc = add(out, files.items[i].path, NCSHL_STEP_LD_CACHE, NCSHL_REACH_FILE, NCSHL_OK,
             files.items[i].why);
  ncshl_list_free(&files);
  return rc;
}

/* The candidates of one step, appended to `out`. 0, or -1 when out of memory. */
static int gather(const ncshl_search *s, const ncshl_step_spec *spec, ncshl_candidates *out) {
  switch (spec->step) {
  case NCSHL_STEP_EXPLICIT:
    return add_explicit(s, out);
  case NCSHL_STEP_ENVIRONMENT:
    return add_environment(s, out);
  case NCSHL_STEP_PRELOADED:
    return add_preloaded(s, out);
  case NCSHL_STEP_LIBRARY_PATH:
    return add_dirs(s, spec->step, ncshl_library_path_places, out);
  case NCSHL_STEP_ACTIVE_ENV:
  case NCSHL_STEP_WELL_KNOWN:
    return spec->places ? add_dirs(s, spec->step, spec->places, out) : 0;
  case NCSHL_STEP_LD_CACHE:
    return add_ld_cache(s, out);
  case NCSHL_STEP_SYSTEM:
    return add(out, s->soname, NCSHL_STEP_SYSTEM, NCSHL_REACH_NAME, NCSHL_OK,
               "the dynamic loader's own search (its default directories, relative "
               "LD_LIBRARY_PATH entries)");
  case NCSHL_STEP_NONE:
    break;
  }
  return 0;
}

void ncshl_candidates_free(ncshl_candidates *candidates) {
  for (size_t i = 0; i < candidates->count; i++) {
    free(candidates->items[i].path);
    free(candidates->items[i].reason);
  }
  free(candidates->items);
  *candidates = (ncshl_candidates){0};
}

int ncshl_search_list(const ncshl_search *search, ncshl_candidates *out) {
  *out = (ncshl_candidates){0};
  for (size_t i = 0; i < search->step_count; i++) {
    size_t before = out->count;
    if (gather(search, &search->steps[i], out) != 0) {
      ncshl_candidates_free(out);
      return -1;
    }
    if (ncshl_step_is_override(search->steps[i].step) && out->count > before) break;
  }
  return 0;
}

/* ---- The try walk --------------------------------------------------------------------- */

/* The state of one run. */
typedef struct run {
  const ncshl_search *search;
  ncshl_found *found;
  ncshl_list tried;            /* files tried: one reached by two steps is tried once */
  ncshl_verdict first_refusal; /* explains a failed search better than the absences after it */
  char first_reason[REASON_SIZE];
  char last[REASON_SIZE + 512]; /* "candidate: reason" of the latest attempt */
  char places[SUMMARY_SIZE];    /* every place looked at, for "not found" */
  int places_used;
  int out_of_memory;
} run;

static const ncshl_verdict absent = {NCSHL_ABSENT, 0};

/* A candidate as one-line summaries show it: a very long path keeps its start and end, so
 * that the reason after it still fits in the message (the attempt keeps it whole). */
enum { SHOWN_MAX = 400, SHOWN_END = 150 };
static const char *shown(const char *candidate, char *buf, size_t size) {
  size_t length = strlen(candidate);
  if (length <= SHOWN_MAX) return candidate;
  snprintf(buf, size, "%.*s[... %zu characters ...]%s", SHOWN_END, candidate,
           length - 2 * SHOWN_END, candidate + length - SHOWN_END);
  return buf;
}

/* Hand the attempt to the caller and keep what the summaries need. A note, or a bare name,
 * is shown in "not found" by its step's wording; a file by its path. */
static ncshl_verdict record(run *r, const char *candidate, ncshl_step step, ncshl_verdict verdict,
                            const char *reason, int by_wording) {
  const ncshl_attempt attempt = {candidate, step, verdict.outcome, verdict.refusal, reason};
  if (r->search->note != NULL && r->search->note(r->search->context, &attempt) != 0)
    r->out_of_memory = 1;
  char buf[SHOWN_MAX + 64];
  const char *place = by_wording || strchr(candidate, '/') == NULL
                          ? ncshl_step_place(step)
                          : shown(candidate, buf, sizeof(buf));
  snprintf(r->last, sizeof(r->last), "%s: %s", shown(candidate, buf, sizeof(buf)), reason);
  if (r->places_used >= 0 && (size_t)r->places_used < sizeof(r->places))
    r->places_used += snprintf(r->places + r->places_used, sizeof(r->places) - r->places_used,
                               "%s %s", r->places_used ? "," : "", place);
  if (verdict.outcome != NCSHL_OK && verdict.outcome != NCSHL_ABSENT &&
      r->first_refusal.outcome == NCSHL_ABSENT) {
    r->first_refusal = verdict;
    snprintf(r->first_reason, sizeof(r->first_reason), "%s", r->last);
  }
  return verdict;
}

/* Offer an open library to `accept`; keep it or close it. */
static ncshl_verdict offer(run *r, void *handle, const char *candidate, ncshl_step step,
                           int preloaded) {
  char reason[REASON_SIZE] = "";
  char *path = ncshl_mapped_path(handle);
  if (path == NULL && (path = strdup(candidate)) == NULL) r->out_of_memory = 1;
  const char *file = path ? path : candidate;
  ncshl_decision d = r->search->accept(r->search->context, handle, file, reason, sizeof(reason));
  if (d.refusal == 0 && path != NULL) {
    char where[2 * REASON_SIZE];
    snprintf(where, sizeof(where), "%s%s%s%s", preloaded ? "already loaded from " : "mapped ", file,
             reason[0] ? "; " : "", reason);
    *r->found = (ncshl_found){handle, d.defined_in ? d.defined_in : path,
                              d.defined_in ? path : NULL, step, preloaded};
    return record(r, candidate, step, (ncshl_verdict){NCSHL_OK, 0}, where, 0);
  }
  free(d.defined_in);
  if (d.refusal == 0) { /* accepted, but its path could not be kept */
    dlclose(handle);
    return record(r, candidate, step, (ncshl_verdict){NCSHL_NO_MEMORY, 0}, "out of memory", 0);
  }
  if (strcmp(file, candidate) != 0) {
    size_t used = strlen(reason);
    snprintf(reason + used, sizeof(reason) - used, " (file %s)", file);
  }
  free(path);
  dlclose(handle);
  return record(r, candidate, step, (ncshl_verdict){NCSHL_REFUSED, d.refusal}, reason, 0);
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
  for (size_t i = 0; i < r->tried.count; i++)
    if (strcmp(r->tried.items[i].path, path) == 0) return absent;
  ncshl_list_add(&r->tried, path, NULL);
  if (r->tried.out_of_memory) r->out_of_memory = 1;
  char reason[REASON_SIZE];
  ncshl_outcome checked = ncshl_elf_check(path, reason, sizeof(reason));
  if (checked != NCSHL_OK) return record(r, path, step, (ncshl_verdict){checked, 0}, reason, 0);
  int preloaded = already_mapped(path);
  if (!preloaded && ncshl_step_is_override(step) && r->search->before_override != NULL) {
    int refusal = r->search->before_override(r->search->context, path, reason, sizeof(reason));
    if (refusal != 0)
      return record(r, path, step, (ncshl_verdict){NCSHL_REFUSED, refusal}, reason, 0);
  }
  char blocking[REASON_SIZE / 2];
  if (!preloaded && ncshl_file_load_blocks(path, r->search->ld_cache, blocking, sizeof(blocking))) {
    snprintf(reason, sizeof(reason),
             "loading it would open %s, which is not a regular file (a FIFO or a terminal): the "
             "dynamic loader would wait forever, so it is not loaded",
             blocking);
    return record(r, path, step, (ncshl_verdict){NCSHL_UNLOADABLE, 0}, reason, 0);
  }
  void *handle = ncshl_open(path, 0, reason, sizeof(reason));
  if (handle == NULL) return record(r, path, step, (ncshl_verdict){NCSHL_UNLOADABLE, 0}, reason, 0);
  return offer(r, handle, path, step, preloaded);
}

static ncshl_verdict try_candidate(run *r, const ncshl_candidate *c) {
  char reason[REASON_SIZE], blocking[REASON_SIZE / 2];
  void *handle;
  switch (c->reach) {
  case NCSHL_REACH_FILE:
    return try_file(r, c->path, c->step);
  case NCSHL_REACH_MAPPED:
    if ((handle = ncshl_open_loaded(c->path)) != NULL) return offer(r, handle, c->path, c->step, 1);
    return record(r, c->path, c->step, absent, "no longer mapped in this process", 0);
  case NCSHL_REACH_PROGRAM:
    handle = dlopen(NULL, RTLD_NOW);
    dlerror();
    if (handle != NULL) return offer(r, handle, c->path, c->step, 1);
    return record(r, c->path, c->step, absent, "the program cannot be opened", 0);
  case NCSHL_REACH_NAME:
    if (ncshl_name_load_blocks(c->path, r->search->ld_cache, blocking, sizeof(blocking))) {
      snprintf(reason, sizeof(reason),
               "its search would open %s, which is not a regular file (a FIFO or a terminal): the "
               "dynamic loader would wait forever, so its own search is not run",
               blocking);
      return record(r, c->path, c->step, (ncshl_verdict){NCSHL_UNLOADABLE, 0}, reason, 1);
    }
    if ((handle = ncshl_open(c->path, 0, reason, sizeof(reason))) != NULL)
      return offer(r, handle, c->path, c->step, 0);
    /* glibc says "cannot open shared object file" both for absence and for a broken file
     * whose name it found; only the former is an absence. */
    return record(
        r, c->path, c->step,
        (ncshl_verdict){strstr(reason, "No such file") ? NCSHL_ABSENT : NCSHL_UNLOADABLE, 0},
        reason, 1);
  case NCSHL_REACH_NONE:
    break;
  }
  return record(r, c->path, c->step, (ncshl_verdict){c->outcome, 0}, c->reason, 1);
}

ncshl_verdict ncshl_search_run(const ncshl_search *search, ncshl_found *found, char *summary,
                               size_t size) {
  run r = {.search = search, .found = found, .first_refusal = absent};
  *found = (ncshl_found){0};
  ncshl_verdict verdict = absent;
  int used_override = 0;
  for (size_t i = 0; i < search->step_count && verdict.outcome != NCSHL_OK && !used_override; i++) {
    ncshl_candidates step = {0};
    if (gather(search, &search->steps[i], &step) != 0) r.out_of_memory = 1;
    for (size_t j = 0; j < step.count && verdict.outcome != NCSHL_OK; j++)
      verdict = try_candidate(&r, &step.items[j]);
    used_override = ncshl_step_is_override(search->steps[i].step) && step.count > 0;
    ncshl_candidates_free(&step);
  }
  ncshl_list_free(&r.tried);
  if (verdict.outcome == NCSHL_OK) {
    snprintf(summary, size, "%s", found->path);
  } else if (used_override) {
    snprintf(summary, size, "%s", r.last);
  } else if (r.first_refusal.outcome != NCSHL_ABSENT) {
    verdict = r.first_refusal;
    snprintf(summary, size, "%s", r.first_reason);
  } else {
    verdict = absent;
    snprintf(summary, size, "%s was not found; searched:%s", search->soname, r.places);
  }
  if (r.out_of_memory && verdict.outcome != NCSHL_OK) verdict = (ncshl_verdict){NCSHL_NO_MEMORY, 0};
  return verdict;
}
