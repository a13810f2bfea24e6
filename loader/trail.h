/* The search trail: every candidate tried, how it was found, and why it was refused. */
#ifndef NCCLSHIM_LOADER_TRAIL_H
#define NCCLSHIM_LOADER_TRAIL_H

#include "ncclshim/status.h"

typedef struct ncshl_trail {
  ncclshim_attempt *items;
  size_t count;
  size_t capacity;
} ncshl_trail;

/* Append a copy of the attempt. Returns 0, or -1 when out of memory (nothing appended). */
int ncshl_trail_add(ncshl_trail *trail, const char *candidate, ncclshim_found_via how,
                    ncclshim_status result, const char *reason);
/* Print the trail to stderr, one attempt per line, each prefixed with `who`. */
void ncshl_trail_print(const ncshl_trail *trail, const char *who);
void ncshl_trail_free(ncshl_trail *trail);

#endif
