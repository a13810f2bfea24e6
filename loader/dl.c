#include "dl.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *ncshl_open(const char *name, int extra_flags, char *reason, size_t size) {
  dlerror();
  void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | extra_flags);
  if (handle == NULL) {
    const char *err = dlerror();
    snprintf(reason, size, "%s", err ? err : "dlopen failed without an error message");
  }
  return handle;
}

void *ncshl_open_loaded(const char *name) {
  void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  dlerror(); /* RTLD_NOLOAD may or may not leave a message: never let it leak to a later call */
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

void *ncshl_object(void *handle, const char *symbol) {
  dlerror();
  void *address = dlsym(handle, symbol);
  dlerror();
  return address;
}

ncshl_fn ncshl_symbol(void *handle, const char *symbol) {
  void *address = ncshl_object(handle, symbol);
  ncshl_fn fn;
  memcpy(&fn, &address, sizeof(fn)); /* object pointer to function pointer, without a cast */
  return fn;
}
