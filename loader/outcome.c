#include "outcome.h"

#include <stddef.h>

typedef struct step_row {
  ncshl_step step;
  int override;
  const char *name;
  const char *place;
} step_row;

#define ROW_(id, value, override, name, place) {NCSHL_STEP_##id, override, name, place},
static const step_row rows[] = {NCSHL_STEPS(ROW_)};

static const step_row *row_of(ncshl_step step) {
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    if (rows[i].step == step) return &rows[i];
  return NULL;
}

const char *ncshl_step_name(ncshl_step step) {
  const step_row *r = row_of(step);
  return r ? r->name : NULL;
}

const char *ncshl_step_place(ncshl_step step) {
  const step_row *r = row_of(step);
  return r ? r->place : NULL;
}

int ncshl_step_is_override(ncshl_step step) {
  const step_row *r = row_of(step);
  return r ? r->override : 0;
}
