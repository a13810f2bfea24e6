#include "trail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ncshl_trail_add(ncshl_trail *trail, const char *candidate, ncclshim_found_via how,
                    ncclshim_status result, const char *reason) {
  if (trail->count == trail->capacity) {
    size_t capacity = trail->capacity ? trail->capacity * 2 : 8;
    ncclshim_attempt *items = realloc(trail->items, capacity * sizeof(*items));
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
  trail->items[trail->count++] = (ncclshim_attempt){candidate_copy, how, result, reason_copy};
  return 0;
}

void ncshl_trail_print(const ncshl_trail *trail, const char *who) {
  for (size_t i = 0; i < trail->count; i++) {
    const ncclshim_attempt *a = &trail->items[i];
    fprintf(stderr, "%s: [%s] %s: %s%s%s\n", who, ncclshim_found_via_name(a->how), a->candidate,
            ncclshim_status_name(a->result), a->reason[0] ? " - " : "", a->reason);
  }
}

void ncshl_trail_free(ncshl_trail *trail) {
  for (size_t i = 0; i < trail->count; i++) {
    free((char *)trail->items[i].candidate);
    free((char *)trail->items[i].reason);
  }
  free(trail->items);
  *trail = (ncshl_trail){0};
}
