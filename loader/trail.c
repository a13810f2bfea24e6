#include "trail.h"

#include <stdlib.h>
#include <string.h>

int ncshl_trail_add(ncshl_trail *trail, const char *candidate, ncshl_step step,
                    ncshl_outcome outcome, int refusal, const char *reason) {
  if (trail->count == trail->capacity) {
    size_t capacity = trail->capacity ? trail->capacity * 2 : 8;
    ncshl_attempt *items = realloc(trail->items, capacity * sizeof(*items));
    if (items == NULL) return -1;
    trail->items = items;
    trail->capacity = capacity;
  }
  char *candidate_copy = strdup(candidate ? candidate : "");
  char *reason_copy = strdup(reason ? reason : "");
  if (candidate_copy == NULL || reason_copy == NULL) {
    free(candidate_copy);
    free(reason_copy);
    return -1;
  }
  trail->items[trail->count++] =
      (ncshl_attempt){candidate_copy, step, outcome, refusal, reason_copy};
  return 0;
}

void ncshl_trail_free(ncshl_trail *trail) {
  for (size_t i = 0; i < trail->count; i++) {
    free(trail->items[i].candidate);
    free(trail->items[i].reason);
  }
  free(trail->items);
  *trail = (ncshl_trail){0};
}
