/* LD_LIBRARY_PATH as ld.so reads it: the directories the search lists, and the files on it
 * that would block ld.so's open. Below both the search and locate, which each use both. */
#include "library_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ncshl_library_path_places(ncshl_list *dirs) {
  const char *value = secure_getenv("LD_LIBRARY_PATH");
  dirs->none = value == NULL || value[0] == '\0'
                   ? "LD_LIBRARY_PATH is not set"
                   : "LD_LIBRARY_PATH has no absolute entry (relative, empty and $-token entries "
                     "are left to the system search)";
  for (const char *start = value; start != NULL && *start != '\0';) {
    size_t length = strcspn(start, ":;");
    if (length > 0 && start[0] == '/' && memchr(start, '$', length) == NULL) {
      char *dir = strndup(start, length);
      if (dir == NULL) {
        dirs->out_of_memory = 1;
        return;
      }
      ncshl_list_add(dirs, dir, "an entry of LD_LIBRARY_PATH");
      free(dir);
    }
    start += length + (start[length] != '\0');
  }
}

int ncshl_blocking_file(const char *soname, char *file, size_t size) {
  const char *value = secure_getenv("LD_LIBRARY_PATH");
  for (const char *start = value; start != NULL && *start != '\0';) {
    size_t length = strcspn(start, ":;");
    struct stat st;
    if (memchr(start, '$', length) == NULL &&
        snprintf(file, size, "%.*s/%s", length ? (int)length : 1, length ? start : ".", soname) <
            (int)size &&
        stat(file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      return 1;
    start += length + (start[length] != '\0');
  }
  return 0;
}
