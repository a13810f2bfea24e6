#include "search.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "elf_check.h"

enum { REASON_SIZE = 1024 };

/* The state of one run: the outcome so far and the first real refusal, which explains a
 * failed search better than the NOT_FOUNDs after it. */
typedef struct run {
  const ncshl_search *search;
  ncshl_trail *trail;
  ncshl_found *found;
  ncclshim_status first_refusal;
  char first_reason[REASON_SIZE];
  int out_of_memory;
} run;

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

static void record(run *r, const char *candidate, ncclshim_found_via how, ncclshim_status result,
                   const char *reason) {
  if (ncshl_trail_add(r->trail, candidate, how, result, reason) != 0) r->out_of_memory = 1;
  if (result != NCCLSHIM_OK && result != NCCLSHIM_NOT_FOUND &&
      r->first_refusal == NCCLSHIM_NOT_FOUND) {
    r->first_refusal = result;
    char buf[SHOWN_MAX + 64];
    snprintf(r->first_reason, sizeof(r->first_reason), "%s: %s", shown(candidate, buf, sizeof(buf)),
             reason);
  }
}

/* Offer an open library to `accept`; keep it or close it. */
static ncclshim_status offer(run *r, void *handle, const char *candidate, ncclshim_found_via how,
                             int preloaded) {
  char reason[REASON_SIZE] = "";
  char *path = ncshl_mapped_path(handle);
  ncclshim_status status = r->search->accept(r->search->context, handle, path ? path : candidate,
                                             reason, sizeof(reason));
  if (status == NCCLSHIM_OK) {
    char where[REASON_SIZE];
    snprintf(where, sizeof(where), "%s%s", preloaded ? "already loaded from " : "mapped ",
             path ? path : candidate);
    record(r, candidate, how, NCCLSHIM_OK, where);
    *r->found = (ncshl_found){handle, path ? path : strdup(candidate), how, preloaded};
    return NCCLSHIM_OK;
  }
  if (path != NULL && strcmp(path, candidate) != 0) {
    size_t used = strlen(reason);
    snprintf(reason + used, sizeof(reason) - used, " (file %s)", path);
  }
  record(r, candidate, how, status, reason);
  free(path);
  dlclose(handle);
  return status;
}

/* Try one file path: the ELF check first, then dlopen. */
static ncclshim_status try_file(run *r, const char *path, ncclshim_found_via how) {
  char reason[REASON_SIZE];
  ncclshim_status status = ncshl_elf_check(path, reason, sizeof(reason));
  if (status != NCCLSHIM_OK) {
    record(r, path, how, status, reason);
    return status;
  }
  void *handle = ncshl_open(path, 0, reason, sizeof(reason));
  if (handle == NULL) {
    record(r, path, how, NCCLSHIM_LOAD_FAILED, reason);
    return NCCLSHIM_LOAD_FAILED;
  }
  return offer(r, handle, path, how, 0);
}

/* A caller's path names a file: "libfoo.so" means ./libfoo.so, never a library search. */
static ncclshim_status try_override(run *r, const char *path, ncclshim_found_via how) {
  if (strchr(path, '/') != NULL) return try_file(r, path, how);
  char *local = malloc(strlen(path) + 3);
  if (local == NULL) return NCCLSHIM_OUT_OF_MEMORY;
  sprintf(local, "./%s", path);
  ncclshim_status status = try_file(r, local, how);
  free(local);
  return status;
}

static ncclshim_status search_overrides(run *r, int *used) {
  const ncshl_search *s = r->search;
  *used = 1;
  if (s->explicit_path != NULL) {
    if (s->explicit_path[0] == '\0') {
      record(r, "(empty path)", NCCLSHIM_VIA_EXPLICIT, NCCLSHIM_INVALID_ARGUMENT,
             "the path given is empty");
      return NCCLSHIM_INVALID_ARGUMENT;
    }
    return try_override(r, s->explicit_path, NCCLSHIM_VIA_EXPLICIT);
  }
  const char *value = s->env_var ? secure_getenv(s->env_var) : NULL;
  if (value != NULL && value[0] != '\0') {
    if (value[0] != '/') {
      char reason[REASON_SIZE];
      snprintf(reason, sizeof(reason), "%s must be an absolute path", s->env_var);
      record(r, value, NCCLSHIM_VIA_ENVIRONMENT, NCCLSHIM_INVALID_ARGUMENT, reason);
      return NCCLSHIM_INVALID_ARGUMENT;
    }
    return try_file(r, value, NCCLSHIM_VIA_ENVIRONMENT);
  }
  *used = 0;
  return NCCLSHIM_NOT_FOUND;
}

static ncclshim_status search_places(run *r) {
  const ncshl_search *s = r->search;
  void *handle = ncshl_open_loaded(s->soname);
  if (handle != NULL) {
    if (offer(r, handle, s->soname, NCCLSHIM_VIA_PRELOADED, 1) == NCCLSHIM_OK) return NCCLSHIM_OK;
  } else {
    record(r, s->soname, NCCLSHIM_VIA_PRELOADED, NCCLSHIM_NOT_FOUND, "not loaded in this process");
  }

  char reason[REASON_SIZE];
  handle = ncshl_open(s->soname, 0, reason, sizeof(reason));
  if (handle != NULL) {
    if (offer(r, handle, s->soname, NCCLSHIM_VIA_SYSTEM, 0) == NCCLSHIM_OK) return NCCLSHIM_OK;
  } else {
    /* glibc says "cannot open shared object file" both for absence and for a broken file
     * whose name it found; only the former is NOT_FOUND. */
    int absent = strstr(reason, "No such file") != NULL;
    record(r, s->soname, NCCLSHIM_VIA_SYSTEM, absent ? NCCLSHIM_NOT_FOUND : NCCLSHIM_LOAD_FAILED,
           reason);
  }

  char **dirs = s->dirs ? s->dirs() : NULL;
  ncclshim_status status = NCCLSHIM_NOT_FOUND;
  for (size_t i = 0; dirs != NULL && dirs[i] != NULL; i++) {
    if (status != NCCLSHIM_OK) {
      size_t length = strlen(dirs[i]) + strlen(s->soname) + 2;
      char *path = malloc(length);
      if (path != NULL) {
        snprintf(path, length, "%s/%s", dirs[i], s->soname);
        status = try_file(r, path, NCCLSHIM_VIA_WELL_KNOWN) == NCCLSHIM_OK ? NCCLSHIM_OK
                                                                            : NCCLSHIM_NOT_FOUND;
        free(path);
      } else {
        r->out_of_memory = 1;
      }
    }
    free(dirs[i]);
  }
  free(dirs);
  return status;
}

/* "libnccl.so.2 was not found; searched: this process, the system loader ..., /opt/x/lib" */
static void describe_not_found(const ncshl_search *search, const ncshl_trail *trail, char *summary,
                               size_t size) {
  int used = snprintf(summary, size, "%s was not found; searched:", search->soname);
  for (size_t i = 0; i < trail->count && used > 0 && (size_t)used < size; i++) {
    const ncclshim_attempt *a = &trail->items[i];
    char buf[SHOWN_MAX + 64];
    const char *place = a->how == NCCLSHIM_VIA_PRELOADED ? "this process (already loaded)"
                        : a->how == NCCLSHIM_VIA_SYSTEM
                            ? "the system loader (LD_LIBRARY_PATH, ld.so cache)"
                            : shown(a->candidate, buf, sizeof(buf));
    used += snprintf(summary + used, size - (size_t)used, "%s %s", i ? "," : "", place);
  }
}

ncclshim_status ncshl_search_run(const ncshl_search *search, ncshl_trail *trail, ncshl_found *found,
                                 char *summary, size_t size) {
  run r = {.search = search, .trail = trail, .found = found, .first_refusal = NCCLSHIM_NOT_FOUND};
  *found = (ncshl_found){0};
  int used_override = 0;
  ncclshim_status status = search_overrides(&r, &used_override);
  if (!used_override) status = search_places(&r);
  if (r.out_of_memory) status = NCCLSHIM_OUT_OF_MEMORY;

  if (status == NCCLSHIM_OK) {
    snprintf(summary, size, "%s", found->path);
  } else if (used_override && trail->count > 0) {
    const ncclshim_attempt *last = &trail->items[trail->count - 1];
    char buf[SHOWN_MAX + 64];
    snprintf(summary, size, "%s: %s", shown(last->candidate, buf, sizeof(buf)), last->reason);
  } else if (r.first_refusal != NCCLSHIM_NOT_FOUND) {
    status = r.first_refusal;
    snprintf(summary, size, "%s", r.first_reason);
  } else {
    describe_not_found(search, trail, summary, size);
  }
  return status;
}
