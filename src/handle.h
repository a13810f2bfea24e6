/* The life of a library handle, shared by the NCCL and CUDA bindings: the options check, the
 * search, the accept step, the message, the debug lines, the registry of open handles, the
 * default handle, close and the common accessors. A binding's handle struct starts with a
 * ncs_handle (its first member, `core`) and adds only what is its own. */
#ifndef NCCLSHIM_HANDLE_H
#define NCCLSHIM_HANDLE_H

#include <pthread.h>
#include <stddef.h>

#include "loader/search.h"
#include "ncclshim/status.h"

typedef struct ncs_handle ncs_handle;
typedef struct ncs_binding ncs_binding;

struct ncs_handle {
  const ncs_binding *binding;
  ncclshim_status status;
  char *message; /* one line: what was loaded, or why not */
  void *library; /* dlopen handle; never dlclose'd once accepted */
  char *path;    /* the file that defines the library's functions */
  char *opened;  /* the file opened, when another one defines them (a wrapper); else NULL */
  ncclshim_found_via via;
  int preloaded;
  ncclshim_attempt *attempts; /* the search's attempts, in the order tried */
  size_t attempt_count;
  size_t attempt_capacity;
  int is_default;        /* the process-wide handle: close ignores it */
  ncs_handle *next_open; /* the registry of open handles */
};

/* Which binding a handle belongs to, for the registry's readers. */
typedef enum ncs_binding_kind { NCCLSHIM_BINDING_NCCL, NCCLSHIM_BINDING_CUDA } ncs_binding_kind;

struct ncs_binding {
  ncs_binding_kind kind;
  const char *who; /* prefix of the debug lines: "ncclshim", "ncclshim cuda" */
  /* The binding's search (loader/search.h): its steps in order, the SONAME, the override
   * variable, the identity symbols, and its accept step (and check before an override),
   * which get the handle as their context. Each returns an ncclshim_status as its refusal
   * code, and writes the handle's own fields only when it accepts: a refused candidate leaves
   * nothing behind. The handle fills in the path given, the ld.so cache, `note` and
   * `context`. */
  ncshl_search search;
  /* The message of a success, after path and via are set. */
  void (*describe)(const ncs_handle *handle, char *text, size_t size);
};

/* Copy the caller's size-first options struct over `defaults` (`size` bytes), after checking
 * that `out` is set and that the caller's struct reaches `required` bytes. OK, or
 * INVALID_ARGUMENT with a message naming `who` and `init_macro`. */
ncclshim_status ncs_handle_options(void *defaults, size_t size, const void *given, size_t required,
                                   const void *out, const char *who, const char *init_macro);

/* Search for the binding's library (`path`: the caller's, or NULL), fill `handle` with the
 * outcome (the binding's accept step fills the rest), register it, print the debug lines
 * when NCCLSHIM_DEBUG asks. Returns the handle's status. */
ncclshim_status ncs_handle_open(ncs_handle *handle, const ncs_binding *binding, const char *path);
/* The ld.so cache file the searches read: NCCLSHIM_LD_CACHE when set to an absolute path
 * (tests point it at a cache of their own, or at /dev/null), else glibc's /etc/ld.so.cache. */
const char *ncs_ld_cache_file(void);

/* Unregister and free a handle (the whole struct that starts with it). */
void ncs_handle_close(ncs_handle *handle);

/* Every open handle is in one registry, which the "unavailable" stubs read to say what is
 * loaded or why nothing is. Call visit on each open handle of that kind, newest first, under
 * the registry's lock, until it returns non-zero. */
void ncs_registry_visit(ncs_binding_kind kind,
                        int (*visit)(const ncs_handle *handle, void *context), void *context);
/* "no <what> is loaded (<why the newest failed open failed>)" into buf. */
void ncs_registry_absent(ncs_binding_kind kind, const char *what, char *buf, size_t size);

/* The process-wide handle of a binding, in the library's static storage (a program that
 * dlcloses libncclshim gets it back with the library's pages; what it points to stays:
 * docs/loader.md, "Unloading libncclshim"), opened once on first use with the default
 * options and never closed. `open_into(type *, const options_type *)` fills zeroed storage.
 * Defines `static type *default_of(void)`, never NULL. */
#define NCCLSHIM_DEFAULT_HANDLE(type, options_type, options_init, open_into) \
  static type default_storage;                                               \
  static pthread_once_t default_once = PTHREAD_ONCE_INIT;                    \
  static void open_default(void) {                                           \
    const options_type opts = options_init;                                  \
    default_storage.core.is_default = 1;                                     \
    open_into(&default_storage, &opts);                                      \
  }                                                                          \
  static type *default_of(void) {                                            \
    pthread_once(&default_once, open_default);                               \
    return &default_storage;                                                 \
  }

/* The accessors every binding offers (PREFIX_status, _message, _path, _found_via,
 * _preloaded, _attempt_count, _attempt), each safe on NULL (the out parameter of an explicit
 * open that ran out of memory; the default handles are static, never NULL). */
#define NCCLSHIM_HANDLE_ACCESSORS(prefix, type)                                          \
  ncclshim_status prefix##_status(const type *h) {                                       \
    return h ? h->core.status : NCCLSHIM_OUT_OF_MEMORY;                                  \
  }                                                                                      \
  const char *prefix##_message(const type *h) {                                          \
    return h && h->core.message ? h->core.message : "out of memory";                     \
  }                                                                                      \
  const char *prefix##_path(const type *h) { return h ? h->core.path : NULL; }           \
  ncclshim_found_via prefix##_found_via(const type *h) {                                 \
    return h ? h->core.via : NCCLSHIM_VIA_NONE;                                          \
  }                                                                                      \
  int prefix##_preloaded(const type *h) { return h ? h->core.preloaded : 0; }            \
  size_t prefix##_attempt_count(const type *h) { return h ? h->core.attempt_count : 0; } \
  const ncclshim_attempt *prefix##_attempt(const type *h, size_t index) {                \
    return h && index < h->core.attempt_count ? &h->core.attempts[index] : NULL;         \
  }

/* The count and entry of a list ncclshim hands out (ncclshim.h), for a struct
 * with `items` and `count`; each list frees its own entries. */
#define NCCLSHIM_LIST_ACCESSORS(prefix, list_type, entry_type)                    \
  size_t prefix##_count(const list_type *list) { return list ? list->count : 0; } \
  const entry_type *prefix##_entry(const list_type *list, size_t index) {         \
    return list && index < list->count ? &list->items[index] : NULL;              \
  }

#endif
