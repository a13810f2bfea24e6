/* The search for one shared library, in a fixed, documented order:
 *   1. a path given through the API, else 2. a path in an environment variable: used alone,
 *      and if unusable the search fails with that reason (never a silent fallback);
 *   3. a copy already mapped in the process (RTLD_NOLOAD on the SONAME);
 *   4. the dynamic loader's own search for the SONAME (LD_LIBRARY_PATH, ld.so cache);
 *   5. the SONAME in each of a list of well-known directories.
 * Each candidate that opens is handed to `accept`; one it refuses is recorded, closed, and the
 * search goes on. Every attempt lands in the trail. */
#ifndef NCCLSHIM_LOADER_SEARCH_H
#define NCCLSHIM_LOADER_SEARCH_H

#include "trail.h"

/* Decide whether an opened library is the one wanted. Returns 0 to accept it, or the caller's
 * own non-zero refusal code (kept in the trail and the verdict) with the reason written to
 * `reason`. */
typedef int (*ncshl_accept_fn)(void *context, void *handle, const char *path, char *reason,
                               size_t size);

typedef struct ncshl_search {
  const char *explicit_path; /* from the API; NULL if none */
  const char *env_var;       /* name of the override variable */
  const char *soname;        /* "libnccl.so.2" */
  /* Well-known directories, asked for only when the search gets that far: a malloc'd,
   * NULL-terminated array of malloc'd strings (freed by the search), or NULL. NULL for none. */
  char **(*dirs)(void);
  ncshl_accept_fn accept;
  void *context;
} ncshl_search;

typedef struct ncshl_found {
  void *handle;
  char *path; /* absolute path mapped; malloc'd */
  ncshl_step step;
  int preloaded;
} ncshl_found;

/* What a search or one try came to: an outcome, and the accept step's code when REFUSED. */
typedef struct ncshl_verdict {
  ncshl_outcome outcome;
  int refusal;
} ncshl_verdict;

/* Run the search. On NCSHL_OK, *found holds the library. Otherwise `summary` says why nothing
 * was chosen (the first real refusal explains a failure better than the absences after it);
 * the trail says what was tried. NCSHL_NO_MEMORY only when the trail could not be kept. */
ncshl_verdict ncshl_search_run(const ncshl_search *search, ncshl_trail *trail, ncshl_found *found,
                               char *summary, size_t size);

#endif
