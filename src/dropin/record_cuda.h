/* The CUDA driver functions the recorder uses (record_cuda.c): the capture query, and the
 * hang dump's events and contexts. */
#ifndef NCCLSHIM_DROPIN_RECORD_CUDA_H
#define NCCLSHIM_DROPIN_RECORD_CUDA_H

#include <link.h>

#include "ncclshim/cuda_functions.h"

/* X(field, name of the driver function) */
#define REC_DRIVER_FUNCTIONS(X)        \
  X(is_capturing, cuStreamIsCapturing) \
  X(event_create, cuEventCreate)       \
  X(event_record, cuEventRecord)       \
  X(event_query, cuEventQuery)         \
  X(event_destroy, cuEventDestroy)     \
  X(ctx_get, cuCtxGetCurrent)          \
  X(ctx_set, cuCtxSetCurrent)

/* The hang thread's capture mode (CUDA 10.1): used where the driver has it. Through the
 * table, a driver without it answers with the table's stub (an error, the mode unchanged);
 * in audit mode it is NULL then. */
#define REC_DRIVER_OPTIONAL(X) X(exchange_capture_mode, cuThreadExchangeStreamCaptureMode)

#define REC_DRIVER_FIELD_(field, name) NCCLSHIM_CUDA_PFN(name) field;
typedef struct rec_driver {
  REC_DRIVER_FUNCTIONS(REC_DRIVER_FIELD_)
  REC_DRIVER_OPTIONAL(REC_DRIVER_FIELD_)
} rec_driver;

/* The driver, or NULL when none is usable (none mapped, or one older than CUDA 10.0). */
const rec_driver *ncs_rec_driver(void);
/* 1 when `stream` is capturing into a graph (the driver says so); 0 otherwise. */
int ncs_rec_capturing(const void *stream);

/* Audit mode (audit.c): the driver comes from the program's libcuda, seen by la_objopen.
 * ncs_rec_cuda_objopen takes the first object that defines every function needed. */
void ncs_rec_cuda_audit(void);
int ncs_rec_cuda_objopen(const struct link_map *map);

#endif
