#include "handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loader/search.h"
#include "internal.h"

enum { TEXT_SIZE = 1536 };

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ncclshim_handle *registry; /* open handles, newest first */

ncclshim_status ncclshim_handle_options(void *defaults, size_t size, const void *given,
                                        size_t required, const void *out, const char *who,
                                        const char *init_macro) {
  if (out == NULL) return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: out is NULL", who);
  if (given == NULL) return NCCLSHIM_OK;
  size_t given_size;
  memcpy(&given_size, given, sizeof(given_size)); /* every options struct starts with its size */
  if (given_size < required)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: options->size %zu is too small (use %s)",
                         who, given_size, init_macro);
  memcpy(defaults, given, size < given_size ? size : given_size);
  return NCCLSHIM_OK;
}

/* The loader's words in ncclshim's: its steps are numbered as ncclshim_found_via is. */
#define SAME_(step, via) ((int)NCSHL_STEP_##step == (int)NCCLSHIM_VIA_##via)
_Static_assert(SAME_(EXPLICIT, EXPLICIT) && SAME_(ENVIRONMENT, ENVIRONMENT) &&
                   SAME_(LOADED, PRELOADED) && SAME_(SYSTEM, SYSTEM) && SAME_(PLACE, WELL_KNOWN) &&
                   SAME_(LIBRARY_PATH, LIBRARY_PATH) && SAME_(ACTIVE_ENV, ACTIVE_ENV) &&
                   SAME_(LD_CACHE, LD_CACHE),
               "search steps and ncclshim_found_via disagree");

static ncclshim_status status_of(ncshl_outcome outcome, int refusal) {
  switch (outcome) {
  case NCSHL_OK:
    return NCCLSHIM_OK;
  case NCSHL_ABSENT:
    return NCCLSHIM_NOT_FOUND;
  case NCSHL_UNLOADABLE:
    return NCCLSHIM_LOAD_FAILED;
  case NCSHL_REFUSED:
    return (ncclshim_status)refusal;
  case NCSHL_BAD_REQUEST:
    return NCCLSHIM_INVALID_ARGUMENT;
  case NCSHL_NO_MEMORY:
    break;
  }
  return NCCLSHIM_OUT_OF_MEMORY;
}

/* The trail as the public API shows it; the strings change hands. */
static int keep_attempts(ncclshim_handle *handle, ncshl_trail *trail) {
  if (trail->count == 0) return 0;
  handle->attempts = calloc(trail->count, sizeof(*handle->attempts));
  if (handle->attempts == NULL) return -1;
  for (size_t i = 0; i < trail->count; i++) {
    ncshl_attempt *a = &trail->items[i];
    handle->attempts[i] = (ncclshim_attempt){a->candidate, (ncclshim_found_via)a->step,
                                             status_of(a->outcome, a->refusal), a->reason};
    a->candidate = a->reason = NULL;
  }
  handle->attempt_count = trail->count;
  return 0;
}

static int accept_candidate(void *context, void *library, const char *path, char *reason,
                            size_t size) {
  ncclshim_handle *handle = context;
  return (int)handle->binding->accept(handle, library, path, reason, size);
}

static int check_override(void *context, const char *path, char *reason, size_t size) {
  ncclshim_handle *handle = context;
  return (int)handle->binding->before_override(handle, path, reason, size);
}

const char *ncclshim_ld_cache_file(void) {
  const char *value = secure_getenv("NCCLSHIM_LD_CACHE");
  return value != NULL && value[0] == '/' ? value : "/etc/ld.so.cache";
}

static void print_debug(const ncclshim_handle *handle) {
  const char *who = handle->binding->who;
  for (size_t i = 0; i < handle->attempt_count; i++) {
    const ncclshim_attempt *a = &handle->attempts[i];
    fprintf(stderr, "%s: [%s] %s: %s%s%s\n", who, ncclshim_found_via_name(a->how), a->candidate,
            ncclshim_status_name(a->result), a->reason[0] ? " - " : "", a->reason);
  }
  fprintf(stderr, "%s: %s\n", who, handle->message ? handle->message : "(out of memory)");
}

ncclshim_status ncclshim_handle_open(ncclshim_handle *handle, const ncclshim_binding *binding,
                                     const char *path) {
  handle->binding = binding;
  ncshl_search search = {
      .explicit_path = path,
      .env_var = binding->env_var,
      .soname = binding->soname,
      .dirs = binding->places,
      .identity_symbol = binding->identity_symbol,
      .impostor_symbol = binding->impostor_symbol,
      .environment = binding->environment_places,
      .read_library_path = binding->read_library_path,
      .ld_cache = binding->read_library_path ? ncclshim_ld_cache_file() : NULL,
      .before_override = binding->before_override ? check_override : NULL,
      .accept = accept_candidate,
      .context = handle,
  };
  char summary[TEXT_SIZE];
  ncshl_trail trail = {0};
  ncshl_found found;
  ncshl_verdict verdict = ncshl_search_run(&search, &trail, &found, summary, sizeof(summary));
  handle->status = status_of(verdict.outcome, verdict.refusal);
  if (keep_attempts(handle, &trail) != 0) handle->status = NCCLSHIM_OUT_OF_MEMORY;
  ncshl_trail_free(&trail);

  char text[TEXT_SIZE + 64];
  if (verdict.outcome == NCSHL_OK) {
    /* Accepted and mapped: the library stays, whatever else failed. */
    handle->library = found.handle;
    handle->path = found.path;
    if (handle->defined_in != NULL) {
      handle->opened = found.path;
      handle->path = handle->defined_in;
      handle->defined_in = NULL;
    }
    handle->via = (ncclshim_found_via)found.step;
    handle->preloaded = found.preloaded;
  }
  if (handle->status == NCCLSHIM_OK) {
    binding->describe(handle, text, sizeof(text));
  } else {
    snprintf(text, sizeof(text), "%s: %s", ncclshim_status_name(handle->status), summary);
    ncclshim_set_error("%s", text);
  }
  handle->message = strdup(text);
  if (ncclshim_debug_enabled()) print_debug(handle);

  pthread_mutex_lock(&registry_lock);
  handle->next_open = registry;
  registry = handle;
  pthread_mutex_unlock(&registry_lock);
  return handle->status;
}

void ncclshim_handle_close(ncclshim_handle *handle) {
  pthread_mutex_lock(&registry_lock);
  for (ncclshim_handle **p = &registry; *p != NULL; p = &(*p)->next_open) {
    if (*p == handle) {
      *p = handle->next_open;
      break;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  for (size_t i = 0; i < handle->attempt_count; i++) {
    free((char *)handle->attempts[i].candidate);
    free((char *)handle->attempts[i].reason);
  }
  free(handle->attempts);
  free(handle->message);
  free(handle->path);
  free(handle->opened);
  free(handle->defined_in);
  free(handle);
}

void ncclshim_registry_visit(ncclshim_binding_kind kind,
                             int (*visit)(const ncclshim_handle *handle, void *context),
                             void *context) {
  pthread_mutex_lock(&registry_lock);
  for (const ncclshim_handle *h = registry; h != NULL; h = h->next_open)
    if (h->binding->kind == kind && visit(h, context)) break;
  pthread_mutex_unlock(&registry_lock);
}

typedef struct absent_note {
  const char *what;
  char *buf;
  size_t size;
} absent_note;

static int note_failure(const ncclshim_handle *handle, void *context) {
  absent_note *note = context;
  if (handle->status == NCCLSHIM_OK) return 0;
  snprintf(note->buf, note->size, "no %s is loaded (%s)", note->what,
           handle->message ? handle->message : "out of memory");
  return 1;
}

void ncclshim_registry_absent(ncclshim_binding_kind kind, const char *what, char *buf,
                              size_t size) {
  snprintf(buf, size, "no %s is loaded", what);
  absent_note note = {what, buf, size};
  ncclshim_registry_visit(kind, note_failure, &note);
}
