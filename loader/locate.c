#include "locate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ld_cache.h"
#include "list.h"
#include "library_path.h"

static char *existing(const char *dir, const char *name) {
  char file[PATH_MAX];
  if (snprintf(file, sizeof(file), "%s/%s", dir, name) >= (int)sizeof(file)) return NULL;
  return access(file, F_OK) == 0 ? realpath(file, NULL) : NULL;
}

char *ncshl_locate(const char *name, const char *ld_cache) {
  if (strchr(name, '/') != NULL) return access(name, F_OK) == 0 ? realpath(name, NULL) : NULL;
  ncshl_list dirs = {0}, files = {0};
  char *found = NULL;
  ncshl_library_path_places(&dirs);
  for (size_t i = 0; i < dirs.count && found == NULL; i++)
    found = existing(dirs.items[i].path, name);
  ncshl_list_free(&dirs);
  if (found == NULL && ld_cache != NULL && ncshl_ld_cache_lookup(ld_cache, name, &files) == 0 &&
      files.count > 0)
    found = realpath(files.items[0].path, NULL);
  ncshl_list_free(&files);
  /* glibc's default directories (its trusted ones, multiarch included on Debian). */
  static const char *const system_dirs[] = {"/lib64",
                                            "/usr/lib64",
                                            "/lib/x86_64-linux-gnu",
                                            "/usr/lib/x86_64-linux-gnu",
                                            "/lib/aarch64-linux-gnu",
                                            "/usr/lib/aarch64-linux-gnu",
                                            "/lib",
                                            "/usr/lib"};
  for (size_t i = 0; found == NULL && i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
    found = existing(system_dirs[i], name);
  return found;
}
