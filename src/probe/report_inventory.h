/* The inventory's files and Python environments, as text lines and JSON members, shared by
 * --explain and --doctor. */
#ifndef NCCLSHIM_PROBE_REPORT_INVENTORY_H
#define NCCLSHIM_PROBE_REPORT_INVENTORY_H

#include <stdio.h>

#include "inventory.h"

/* "  NCCLs visible (N):" and a line per file; with `symbol`, whether each defines it. */
void inventory_print_text(const inventory *inv, const char *symbol, FILE *out);
/* "  a plain process loads: ..." and the same for ncclshim and each Python environment. */
void inventory_print_winners_text(const inventory *inv, const char *symbol, FILE *out);
/* The members "copies": [...], "plain_process": ..., "ncclshim": ..., "python_envs": [...],
 * "host_glibc": ..., "driver_cuda": ... (no comma before or after). */
void inventory_print_json(const inventory *inv, const char *symbol, FILE *out);

#endif
