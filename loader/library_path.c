/* LD_LIBRARY_PATH as ld.so reads it: the directories the search lists. Below both the search
 * and locate. */
#include "library_path.h"

#include <stdlib.h>
#include <string.h>

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
