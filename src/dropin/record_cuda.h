/* The CUDA driver functions the recorder uses (record_cuda.c): the capture query, and the
 * hang dump's events and contexts, as the tracker's view of the one CUDA list
 * (NCS_TRACK_DRIVER_FUNCTIONS in src/track/track.h). */
#ifndef NCCLSHIM_DROPIN_RECORD_CUDA_H
#define NCCLSHIM_DROPIN_RECORD_CUDA_H

#include <link.h>

#include "src/track/track.h"

/* The driver, or NULL when none is usable (none mapped, or one older than CUDA 10.0). */
const ncs_track_driver *ncs_rec_driver(void);
/* 1 when `stream` is capturing into a graph (the driver says so); 0 otherwise. */
int ncs_rec_capturing(const void *stream);

/* Audit mode (audit.c): the driver comes from the program's libcuda, seen by la_objopen.
 * ncs_rec_cuda_objopen takes the first object that defines every function needed. */
void ncs_rec_cuda_audit(void);
int ncs_rec_cuda_objopen(const struct link_map *map);

#endif
