/* The facts ncclshim-probe reports, gathered once and printed as text or JSON. */
#ifndef NCCLSHIM_PROBE_H
#define NCCLSHIM_PROBE_H

#include <stdio.h>

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"

typedef struct probe_device {
  ncclshim_status status; /* of ncclshim_cuda_describe_device */
  ncclshim_cuda_device_info info;
} probe_device;

typedef struct probe {
  ncclshim_nccl *nccl;
  ncclshim_cuda *cuda;
  int verbose;
  int query_devices;           /* 0 with --no-devices */
  ncclshim_status cuda_init;   /* of ncclshim_cuda_init; OK only when it ran and succeeded */
  const char *devices_skipped; /* why no device was queried, NULL if they were */
  int device_count;
  probe_device *devices;
  char fingerprint[128];
} probe;

void probe_print_text(probe *p, FILE *out);
void probe_print_json(probe *p, FILE *out);

/* "yes", "no", "failed (CUDA_ERROR_...)" into buf. */
const char *probe_fact_text(const probe *p, ncclshim_cuda_fact fact, char *buf, size_t size);

#endif
