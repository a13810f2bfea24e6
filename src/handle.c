#include "handle.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { TEXT_SIZE = 1536 };

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ncs_handle *registry; /* open handles, newest first */

ncclshim_status ncs_handle_options(void *defaults, size_t size, const void *given, size_t required,
                                   const void *out, const char *who, const char *init_macro) {
  if (out == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: out is NULL", who);
  if (given == NULL) return NCCLSHIM_OK;
  size_t given_size;
  memcpy(&given_size, given, sizeof(given_size)); /* every options struct starts with its size */
  if (given_size < required)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: options->size %zu is too small (use %s)", who,
                    given_size, init_macro);
  memcpy(defaults, given, size < given_size ? size : given_size);
  return NCCLSHIM_OK;
}

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

/* The search's `note`: each attempt kept as the public API shows it. */
static int keep_attempt(void *context, const ncshl_attempt *a) {
  ncs_handle *handle = context;
  if (handle->attempt_count == handle->attempt_capacity) {
    size_t capacity = handle->attempt_capacity ? 2 * handle->attempt_capacity : 8;
    ncclshim_attempt *grown = realloc(handle->attempts, capacity * sizeof(*grown));
    if (grown == NULL) {
      handle->status = NCCLSHIM_OUT_OF_MEMORY;
      return -1;
    }
    handle->attempts = grown;
    handle->attempt_capacity = capacity;
  }
  char *candidate = strdup(a->candidate), *reason = strdup(a->reason);
  if (candidate == NULL || reason == NULL) {
    free(candidate);
    free(reason);
    handle->status = NCCLSHIM_OUT_OF_MEMORY;
    return -1;
  }
  handle->attempts[handle->attempt_count++] = (ncclshim_attempt){
      candidate, (ncclshim_found_via)a->step, status_of(a->outcome, a->refusal), reason};
  return 0;
}

const char *ncs_ld_cache_file(void) {
  const char *value = secure_getenv("NCCLSHIM_LD_CACHE");
  return value != NULL && value[0] == '/' ? value : "/etc/ld.so.cache";
}

/* One debug line, its control characters as \xNN: a path may hold an escape sequence or a
 * newline. */
static void print_line(const char *text) {
  for (const unsigned char *c = (const unsigned char *)text; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      fprintf(stderr, "\\x%02x", *c);
    else
      fputc(*c, stderr);
  fputc('\n', stderr);
}

static void print_debug(const ncs_handle *handle) {
  const char *who = handle->binding->who;
  char line[3 * PATH_MAX];
  for (size_t i = 0; i < handle->attempt_count; i++) {
    const ncclshim_attempt *a = &handle->attempts[i];
    snprintf(line, sizeof(line), "%s: [%s] %s: %s%s%s", who, ncclshim_found_via_name(a->how),
             a->candidate, ncclshim_status_name(a->result), a->reason[0] ? " - " : "", a->reason);
    print_line(line);
  }
  snprintf(line, sizeof(line), "%s: %s", who,
           handle->message ? handle->message : "(out of memory)");
  print_line(line);
}

ncclshim_status ncs_handle_open(ncs_handle *handle, const ncs_binding *binding, const char *path) {
  handle->binding = binding;
  ncshl_search search = binding->search;
  search.explicit_path = path;
  search.ld_cache = ncs_ld_cache_file();
  search.note = keep_attempt;
  search.context = handle;
  char summary[TEXT_SIZE];
  ncshl_found found;
  ncshl_verdict verdict = ncshl_search_run(&search, &found, summary, sizeof(summary));
  /* keep_attempt leaves OUT_OF_MEMORY when it lost an attempt; a library found stays. */
  if (handle->status == NCCLSHIM_OK) handle->status = status_of(verdict.outcome, verdict.refusal);

  char text[TEXT_SIZE + 64];
  if (verdict.outcome == NCSHL_OK) {
    /* Accepted and mapped: the library stays, whatever else failed. */
    handle->library = found.handle;
    handle->path = found.path;
    handle->opened = found.opened;
    handle->via = (ncclshim_found_via)found.step;
    handle->preloaded = found.preloaded;
  }
  if (handle->status == NCCLSHIM_OK) {
    binding->describe(handle, text, sizeof(text));
  } else {
    snprintf(text, sizeof(text), "%s: %s", ncclshim_status_name(handle->status), summary);
    ncs_set_error("%s", text);
  }
  handle->message = strdup(text);
  if (ncs_debug_enabled()) print_debug(handle);

  pthread_mutex_lock(&registry_lock);
  handle->next_open = registry;
  registry = handle;
  pthread_mutex_unlock(&registry_lock);
  return handle->status;
}

void ncs_handle_close(ncs_handle *handle) {
  pthread_mutex_lock(&registry_lock);
  for (ncs_handle **p = &registry; *p != NULL; p = &(*p)->next_open) {
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
  free(handle);
}

void ncs_registry_visit(ncs_binding_kind kind,
                        int (*visit)(const ncs_handle *handle, void *context), void *context) {
  pthread_mutex_lock(&registry_lock);
  for (const ncs_handle *h = registry; h != NULL; h = h->next_open)
    if (h->binding->kind == kind && visit(h, context)) break;
  pthread_mutex_unlock(&registry_lock);
}

typedef struct absent_note {
  const char *what;
  char *buf;
  size_t size;
} absent_note;

static int note_failure(const ncs_handle *handle, void *context) {
  absent_note *note = context;
  if (handle->status == NCCLSHIM_OK) return 0;
  snprintf(note->buf, note->size, "no %s is loaded (%s)", note->what,
           handle->message ? handle->message : "out of memory");
  return 1;
}

void ncs_registry_absent(ncs_binding_kind kind, const char *what, char *buf, size_t size) {
  snprintf(buf, size, "no %s is loaded", what);
  absent_note note = {what, buf, size};
  ncs_registry_visit(kind, note_failure, &note);
}
