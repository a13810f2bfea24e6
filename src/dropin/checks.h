/* The drop-in's checks on NCCL's answers (checks.c). */
#ifndef NCCLSHIM_DROPIN_CHECKS_H
#define NCCLSHIM_DROPIN_CHECKS_H

#include "ncclshim/ncclshim.h"

/* Wrap the entries of `table` that a check watches (ncclDevCommCreate; the inits when
 * NCCLSHIM_AGREE is on). The wrappers call the entries `table` had; `own` is the
 * loaded NCCL's own table. Called once, at load, before `table` is handed out. */
void ncs_dropin_checks(ncclshim_nccl_table *table, const ncclshim_nccl_table *own);

#endif
