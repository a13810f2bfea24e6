/* The search for one shared library, in a fixed, documented order:
 *   1. a path given through the API, else 2. a path in an environment variable: used alone,
 *      and if unusable the search fails with that reason (never a silent fallback);
 *   3. a copy already mapped in the process (RTLD_NOLOAD on the SONAME, else any mapped object
 *      that defines the identity symbol, the program included);
 *   4. the SONAME in each absolute directory of LD_LIBRARY_PATH (what the user set);
 *   5. the SONAME in each directory of the active environment (the caller's list);
 *   6. every file the ld.so cache registers under the SONAME, in the cache's order;
 *   7. the dynamic loader's own search for the SONAME (what 4 and 6 do not cover: the default
 *      directories, relative LD_LIBRARY_PATH entries);
 *   8. the SONAME in each of a list of well-known directories.
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

/* Called before an override file (steps 1 and 2) is opened: 0 to go on, or the caller's own
 * refusal code with the reason (the file is then never mapped). */
typedef int (*ncshl_check_fn)(void *context, const char *path, char *reason, size_t size);

/* Lists of directories, asked for only when the search gets that far: a malloc'd,
 * NULL-terminated array of malloc'd strings (freed by the search), or NULL for none. */
typedef char **(*ncshl_dirs_fn)(void);

typedef struct ncshl_search {
  const char *explicit_path;   /* from the API; NULL if none */
  const char *env_var;         /* name of the override variable */
  const char *soname;          /* "libnccl.so.2" */
  const char *identity_symbol; /* a function only the wanted library defines; NULL: none */
  const char *impostor_symbol; /* step 3 skips mapped objects defining this; NULL: none */
  int read_library_path;       /* 1: run step 4 */
  ncshl_dirs_fn environment;   /* step 5, or NULL */
  const char *ld_cache;        /* the cache file of step 6; NULL skips the step */
  ncshl_dirs_fn dirs;          /* step 8, or NULL */
  ncshl_check_fn before_override;
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

/* The absolute entries of LD_LIBRARY_PATH (secure_getenv), as ld.so splits it (':' or ';'),
 * in a list as ncshl_dirs_fn gives one. Empty, relative and $ORIGIN-style entries are left to
 * step 7, where ld.so reads them itself. */
char **ncshl_library_path_dirs(void);

/* Run the search. On NCSHL_OK, *found holds the library. Otherwise `summary` says why nothing
 * was chosen (the first real refusal explains a failure better than the absences after it);
 * the trail says what was tried. NCSHL_NO_MEMORY only when the trail could not be kept. */
ncshl_verdict ncshl_search_run(const ncshl_search *search, ncshl_trail *trail, ncshl_found *found,
                               char *summary, size_t size);

#endif
