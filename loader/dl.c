#include "dl.h"

#include <dlfcn.h>
#include <elf.h>
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

static char *map_path(const struct link_map *map) {
  /* The program's own entry has no name. */
  const char *name = map->l_name && map->l_name[0] ? map->l_name : "/proc/self/exe";
  char *resolved = realpath(name, NULL);
  return resolved ? resolved : strdup(name);
}

ncshl_definition ncshl_define(void *handle, const char *symbol, void **address, char **definer) {
  if (definer != NULL) *definer = NULL;
  *address = ncshl_object(handle, symbol);
  if (*address == NULL) return NCSHL_DEFINED_NOWHERE;
  Dl_info info;
  const ElfW(Sym) *entry = NULL;
  if (dladdr1(*address, &info, (void **)&entry, RTLD_DL_SYMENT) == 0 || entry == NULL ||
      info.dli_saddr != *address)
    return NCSHL_DEFINED_UNPLACED;
  int type = ELF64_ST_TYPE(entry->st_info);
  if (type != STT_FUNC && type != STT_GNU_IFUNC) return NCSHL_DEFINED_DATA;
  struct link_map *own = NULL, *defining = NULL;
  if (definer != NULL && dlinfo(handle, RTLD_DI_LINKMAP, &own) == 0 &&
      dladdr1(*address, &info, (void **)&defining, RTLD_DL_LINKMAP) != 0 && defining != NULL &&
      defining != own)
    *definer = map_path(defining);
  dlerror();
  return NCSHL_DEFINED_FUNCTION;
}
