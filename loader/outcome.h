/* The loader's own small vocabulary: what became of a candidate, and which step of the
 * search tried it. The bindings above translate these into their public statuses. */
#ifndef NCCLSHIM_LOADER_OUTCOME_H
#define NCCLSHIM_LOADER_OUTCOME_H

typedef enum ncshl_outcome {
  NCSHL_OK = 0,      /* usable (a check passed; a candidate was accepted) */
  NCSHL_ABSENT,      /* no such file */
  NCSHL_UNLOADABLE,  /* a file exists, but the ELF check or dlopen refused it */
  NCSHL_REFUSED,     /* it opened, but the caller's accept step refused it (see `refusal`) */
  NCSHL_BAD_REQUEST, /* the caller's path cannot be used (empty, relative override) */
  NCSHL_NO_MEMORY    /* the trail could not be kept */
} ncshl_outcome;

/* The steps of a search. They run in the order EXPLICIT, ENVIRONMENT, LOADED, LIBRARY_PATH,
 * ACTIVE_ENV, LD_CACHE, SYSTEM, PLACE; the numbers are stable (new steps were appended). */
typedef enum ncshl_step {
  NCSHL_STEP_EXPLICIT = 1, /* a path given by the caller */
  NCSHL_STEP_ENVIRONMENT,  /* a path in the override variable */
  NCSHL_STEP_LOADED,       /* already mapped in the process */
  NCSHL_STEP_SYSTEM,       /* the dynamic loader's own search for the SONAME */
  NCSHL_STEP_PLACE,        /* one of the caller's well-known directories */
  NCSHL_STEP_LIBRARY_PATH, /* a directory of LD_LIBRARY_PATH */
  NCSHL_STEP_ACTIVE_ENV,   /* a directory of the active environment (the caller's list) */
  NCSHL_STEP_LD_CACHE      /* a file the ld.so cache registers under the SONAME */
} ncshl_step;

#endif
