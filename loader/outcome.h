/* The loader's own small vocabulary: what became of a candidate, and the steps a search can
 * take. The bindings above translate these into their public statuses. */
#ifndef NCCLSHIM_LOADER_OUTCOME_H
#define NCCLSHIM_LOADER_OUTCOME_H

typedef enum ncshl_outcome {
  NCSHL_OK = 0,      /* usable (a check passed; a candidate was accepted) */
  NCSHL_ABSENT,      /* no such file */
  NCSHL_UNLOADABLE,  /* a file exists, but the ELF check or dlopen refused it */
  NCSHL_REFUSED,     /* it opened, but the caller's accept step refused it (see `refusal`) */
  NCSHL_BAD_REQUEST, /* the caller's path cannot be used (empty, relative override) */
  NCSHL_NO_MEMORY    /* the record of the search could not be kept */
} ncshl_outcome;

/* The one list of search steps: X(ID, value, override, name, place)
 *   value     a stable number (new steps are appended); ncclshim's public ncclshim_found_via
 *             has the same numbers under the same IDs (checked where it is named)
 *   override  1 for a path the caller gives: used alone, the search ends with it
 *   name      the step's name in reports and debug lines
 *   place     how a "not found" summary names the step when it tried a name, not a file
 * The order a search runs them in is the caller's (ncshl_search.steps), not this one. */
#define NCSHL_STEPS(X)                                                                 \
  X(EXPLICIT, 1, 1, "explicit", "the path given")                                      \
  X(ENVIRONMENT, 2, 1, "environment", "the override variable")                         \
  X(PRELOADED, 3, 0, "already-loaded", "this process (already loaded)")                \
  X(SYSTEM, 4, 0, "system-search", "the system loader (LD_LIBRARY_PATH, ld.so cache)") \
  X(WELL_KNOWN, 5, 0, "well-known-place", "the well-known places")                     \
  X(LIBRARY_PATH, 6, 0, "library-path", "LD_LIBRARY_PATH")                             \
  X(ACTIVE_ENV, 7, 0, "active-environment", "the active environment")                  \
  X(LD_CACHE, 8, 0, "ld-cache", "the ld.so cache")

#define NCSHL_STEP_ENUM_(id, value, override, name, place) NCSHL_STEP_##id = value,
typedef enum ncshl_step { NCSHL_STEP_NONE = 0, NCSHL_STEPS(NCSHL_STEP_ENUM_) } ncshl_step;
#undef NCSHL_STEP_ENUM_

/* The step's name ("ld-cache"), its place wording, and whether it is an override; NULL, NULL
 * and 0 for a value outside the list. */
const char *ncshl_step_name(ncshl_step step);
const char *ncshl_step_place(ncshl_step step);
int ncshl_step_is_override(ncshl_step step);

#endif
