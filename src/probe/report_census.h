/* The census and the list of every NCCL visible, for report_text.c and report_json.c. */
#ifndef NCCLSHIM_PROBE_REPORT_CENSUS_H
#define NCCLSHIM_PROBE_REPORT_CENSUS_H

#include <stdio.h>

#include "probe.h"

/* "  in process: N NCCLs" and, when more than one, a line for each (under the NCCL block). */
void probe_text_census(const probe *p, FILE *out);
/* "NCCL libraries visible: N" and a line for each: chosen mark, version, how, path. */
void probe_text_visible(const probe *p, FILE *out);
/* The JSON members "census": [...], "visible": [...] (no comma before or after). */
void probe_json_census(const probe *p, FILE *out);

#endif
