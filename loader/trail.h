/* The search trail: every candidate tried, which step tried it, and why it was refused. */
#ifndef NCCLSHIM_LOADER_TRAIL_H
#define NCCLSHIM_LOADER_TRAIL_H

#include <stddef.h>

#include "outcome.h"

typedef struct ncshl_attempt {
  char *candidate;
  ncshl_step step;
  ncshl_outcome outcome;
  int refusal;  /* the accept step's own code when outcome is NCSHL_REFUSED, else 0 */
  char *reason; /* "" when accepted */
} ncshl_attempt;

typedef struct ncshl_trail {
  ncshl_attempt *items;
  size_t count;
  size_t capacity;
} ncshl_trail;

/* Append a copy of the attempt. Returns 0, or -1 when out of memory (nothing appended). */
int ncshl_trail_add(ncshl_trail *trail, const char *candidate, ncshl_step step,
                    ncshl_outcome outcome, int refusal, const char *reason);
void ncshl_trail_free(ncshl_trail *trail);

#endif
