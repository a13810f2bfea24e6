#include "outcome.h"

#include <stddef.h>

/* Indexed by the step's value (the values are small and dense). */
static const struct {
  const char *name;
  const char *place;
  int override;
} rows[] = {
#define ROW_(id, value, override, name, place) [value] = {name, place, override},
    NCSHL_STEPS(ROW_)
#undef ROW_
};

#define KNOWN(step) ((unsigned)(step) < sizeof(rows) / sizeof(rows[0]) && rows[step].name != NULL)

const char *ncshl_step_name(ncshl_step step) { return KNOWN(step) ? rows[step].name : NULL; }

const char *ncshl_step_place(ncshl_step step) { return KNOWN(step) ? rows[step].place : NULL; }

int ncshl_step_is_override(ncshl_step step) { return KNOWN(step) ? rows[step].override : 0; }
