#include "dl.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"

void *ncshl_open(const char *name, int extra_flags, char *reason, size_t size) {
  dlerror();
  void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | extra_flags);
  if (handle == NULL) {
    const char *err = dlerror();
    /* glibc's text starts with the name it was given ("NAME: cannot ..."), which every reason
     * is already said after: said once. A dependency's name that leads it stays. */
    size_t n = strlen(name);
    if (err != NULL && strncmp(err, name, n) == 0 && strncmp(err + n, ": ", 2) == 0) err += n + 2;
    snprintf(reason, size, "%s", err ? err : "dlopen failed without an error message");
  }
  return handle;
}

void *ncshl_open_loaded(const char *name) {
  /* The link-map name found from memory; glibc matches it against its list without opening a
   * file, where RTLD_NOLOAD of a bare name would open each file its search names. */
  char *mapped = ncshl_mapped_name(name);
  if (mapped == NULL) return NULL;
  void *handle = dlopen(mapped, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  dlerror(); /* RTLD_NOLOAD may or may not leave a message: never let it leak to a later call */
  free(mapped);
  return handle;
}

char *ncshl_mapped_path(void *handle) {
  struct link_map *map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL || map->l_name == NULL ||
      map->l_name[0] == '\0') {
    dlerror();
    return NULL;
  }
  char *resolved = realpath(map->l_name, NULL);
  return resolved ? resolved : strdup(map->l_name);
}

/* dlsym alone, for a name whose lookup is known to stay inside every object's tables. */
static void *lookup_checked(void *handle, const char *symbol) {
  dlerror();
  void *address = dlsym(handle, symbol);
  dlerror();
  return address;
}

void *ncshl_object(void *handle, const char *symbol) {
  return ncshl_lookup_unsafe(symbol, NULL, 0) ? NULL : lookup_checked(handle, symbol);
}

ncshl_fn ncshl_symbol(void *handle, const char *symbol) {
  void *address = ncshl_object(handle, symbol);
  ncshl_fn fn;
  memcpy(&fn, &address, sizeof(fn)); /* object pointer to function pointer, without a cast */
  return fn;
}

ncshl_definition ncshl_define(void *handle, const char *symbol, void **address, char **definer) {
  if (definer != NULL) *definer = NULL;
  *address = NULL;
  char corrupt[PATH_MAX];
  if (ncshl_lookup_unsafe(symbol, corrupt, sizeof(corrupt))) {
    if (definer != NULL) *definer = strdup(corrupt);
    return NCSHL_DEFINED_CORRUPT;
  }
  *address = lookup_checked(handle, symbol);
  if (*address == NULL) return NCSHL_DEFINED_NOWHERE;
  ncshl_held held;
  if (!ncshl_object_holding(*address, symbol, &held)) return NCSHL_DEFINED_UNPLACED;
  ncshl_definition kind = held.kind == NCSHL_SYMBOL_FUNCTION ? NCSHL_DEFINED_FUNCTION
                          : held.kind == NCSHL_SYMBOL_TLS    ? NCSHL_DEFINED_UNPLACED
                                                             : NCSHL_DEFINED_DATA;
  struct link_map *own = NULL;
  if (kind == NCSHL_DEFINED_FUNCTION && definer != NULL &&
      dlinfo(handle, RTLD_DI_LINKMAP, &own) == 0 && own != NULL && own->l_addr != held.base)
    *definer = ncshl_held_path(&held);
  dlerror();
  return kind;
}
