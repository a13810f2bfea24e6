/* Whether a recorder dump (ncclshim-record-*) is in a directory: the condition the jobs that
 * wait for a dump by themselves check (interposed_cuda.c, gpu/hang_job.c). */
#ifndef NCCLSHIM_TEST_HAS_DUMP_H
#define NCCLSHIM_TEST_HAS_DUMP_H

#include <dirent.h>
#include <string.h>

static inline int has_dump(const char *dir) {
  DIR *d = opendir(dir);
  int found = 0;
  for (struct dirent *e; d != NULL && !found && (e = readdir(d)) != NULL;)
    found = strncmp(e->d_name, "ncclshim-record-", 16) == 0;
  if (d != NULL) closedir(d);
  return found;
}

#endif
