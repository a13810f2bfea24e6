/* The search for one shared library, stated by its caller as data: an ordered array of steps
 * (outcome.h lists the kinds), each with its source of candidates:
 *   EXPLICIT      the path given through the API (a bare name means ./name)
 *   ENVIRONMENT   the absolute path in the variable `env_var`
 *                 (either override is used alone: if unusable the search fails with that
 *                 reason, never a silent fallback)
 *   PRELOADED     a copy already mapped in the process: RTLD_NOLOAD on the SONAME, then any
 *                 mapped object defining `identity_symbol` (the program included) that does
 *                 not define `impostor_symbol`
 *   LIBRARY_PATH  the SONAME in each absolute directory of LD_LIBRARY_PATH
 *   ACTIVE_ENV, WELL_KNOWN  the SONAME in each directory the step's `places` gives
 *   LD_CACHE      every file the ld.so cache `ld_cache` registers under the SONAME
 *   SYSTEM        the dynamic loader's own search for the SONAME (what LIBRARY_PATH and
 *                 LD_CACHE do not cover: default directories, relative LD_LIBRARY_PATH entries)
 * A directory step that names no directory (LD_LIBRARY_PATH unset, no Python environment)
 * leaves a note saying so (the places function's `none`), so that every step has a line in
 * the trail.
 * Two walks share that array, so the order is written once:
 *   ncshl_search_list  every candidate, with its step and why, opening nothing;
 *   ncshl_search_run   each candidate in turn: the ELF check, dlopen, then `accept`, until one
 *                      is accepted. A refused candidate is recorded, closed, and the search
 *                      goes on. Every attempt is handed to `note`. */
#ifndef NCCLSHIM_LOADER_SEARCH_H
#define NCCLSHIM_LOADER_SEARCH_H

#include <stddef.h>

#include "list.h"
#include "outcome.h"

/* What the accept step decided. */
typedef struct ncshl_decision {
  int refusal;      /* 0: accepted; else the caller's own code, kept in the verdict */
  char *defined_in; /* accepted, and the library's functions are defined in another file (the
                       library only links it): that file, malloc'd; else NULL */
} ncshl_decision;

/* Is the opened library at `path` the one wanted? On refusal, the reason goes to `reason`; on
 * acceptance a non-empty reason is a note kept in the attempt. */
typedef ncshl_decision (*ncshl_accept_fn)(void *context, void *library, const char *path,
                                          char *reason, size_t size);

/* Called before an override file (EXPLICIT, ENVIRONMENT) is opened: 0 to go on, or the
 * caller's own refusal code with the reason (the file is then never mapped). */
typedef int (*ncshl_check_fn)(void *context, const char *path, char *reason, size_t size);

/* Adds a step's directories to the list, each with why it is there. */
typedef void (*ncshl_places_fn)(ncshl_list *dirs);

typedef struct ncshl_step_spec {
  ncshl_step step;
  ncshl_places_fn places; /* ACTIVE_ENV and WELL_KNOWN: the directories; NULL otherwise */
} ncshl_step_spec;

/* One attempt, as handed to `note` (the strings live for the call only). */
typedef struct ncshl_attempt {
  const char *candidate;
  ncshl_step step;
  ncshl_outcome outcome;
  int refusal;        /* the accept step's code when outcome is NCSHL_REFUSED, else 0 */
  const char *reason; /* why it was refused; for the accepted one, where it was mapped */
} ncshl_attempt;

typedef struct ncshl_search {
  const ncshl_step_spec *steps; /* in the order they run */
  size_t step_count;
  const char *soname;             /* "libnccl.so.2" */
  const char *explicit_path;      /* EXPLICIT: from the API; NULL if none */
  const char *env_var;            /* ENVIRONMENT: name of the override variable */
  const char *identity_symbol;    /* PRELOADED: a function only the wanted library defines */
  const char *impostor_symbol;    /* PRELOADED skips mapped objects defining this; NULL: none */
  const char *ld_cache;           /* LD_CACHE: the cache file; NULL skips the step */
  ncshl_check_fn before_override; /* may be NULL */
  ncshl_accept_fn accept;
  int (*note)(void *context, const ncshl_attempt *attempt); /* 0, or -1: out of memory */
  void *context;                                            /* for the three callbacks */
} ncshl_search;

/* How the try walk reaches a candidate. */
typedef enum ncshl_reach {
  NCSHL_REACH_FILE,    /* a file: the ELF check, then dlopen of the path */
  NCSHL_REACH_MAPPED,  /* an object already mapped (by SONAME or path): RTLD_NOLOAD */
  NCSHL_REACH_PROGRAM, /* the executable itself: dlopen(NULL) */
  NCSHL_REACH_NAME,    /* a bare SONAME for the dynamic loader's own search */
  NCSHL_REACH_NONE     /* nothing to try: a note of what the step found (see `outcome`) */
} ncshl_reach;

/* One candidate of the listing walk. */
typedef struct ncshl_candidate {
  char *path; /* a file, a mapped object, the SONAME; for a note the place looked at */
  ncshl_step step;
  ncshl_reach reach;
  ncshl_outcome outcome; /* NCSHL_OK: to be tried; ABSENT or BAD_REQUEST for a note */
  char *reason;          /* why it is a candidate ("LD_LIBRARY_PATH entry"), or the note */
} ncshl_candidate;

typedef struct ncshl_candidates {
  ncshl_candidate *items;
  size_t count;
} ncshl_candidates;

/* The listing walk: every candidate of every step, in the order the try walk takes them,
 * opening no file (RTLD_NOLOAD and the mapped objects' tables only read what is mapped). It
 * ends after an override step that has a candidate, as the try walk does. `accept`, `note` and
 * `before_override` are not used. 0, or -1 when out of memory (*out then empty). */
int ncshl_search_list(const ncshl_search *search, ncshl_candidates *out);
void ncshl_candidates_free(ncshl_candidates *candidates);

typedef struct ncshl_found {
  void *handle;
  char *path;   /* the file defining the library's functions; malloc'd */
  char *opened; /* the file opened, when another one defines the functions; else NULL */
  ncshl_step step;
  int preloaded;
} ncshl_found;

/* What a search or one try came to: an outcome, and the accept step's code when REFUSED. */
typedef struct ncshl_verdict {
  ncshl_outcome outcome;
  int refusal;
} ncshl_verdict;

/* The try walk. On NCSHL_OK, *found holds the library. Otherwise `summary` says why nothing
 * was chosen (the first real refusal explains a failure better than the absences after it).
 * NCSHL_NO_MEMORY when the record could not be kept. */
ncshl_verdict ncshl_search_run(const ncshl_search *search, ncshl_found *found, char *summary,
                               size_t size);

#endif
