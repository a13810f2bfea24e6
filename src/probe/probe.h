/* The facts ncclshim-probe reports, gathered once and printed as text or JSON. */
#ifndef NCCLSHIM_PROBE_H
#define NCCLSHIM_PROBE_H

#include <stdio.h>

#include "ncclshim/cuda.h"
#include "ncclshim/nccl_plugins.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

/* The JSON document's "schema_version": raised whenever a key is renamed, removed or changes
 * type (1 was the unversioned first form). New keys alone do not raise it. */
#define PROBE_JSON_SCHEMA_VERSION 2

typedef struct probe_device {
  ncclshim_status status; /* of ncclshim_cuda_describe_device */
  ncclshim_cuda_device_info info;
} probe_device;

/* Whether the CUDA driver can run the NCCL found, from NCCL's "+cudaX.Y" build tag. */
typedef enum probe_driver_verdict {
  PROBE_DRIVER_UNKNOWN,     /* no NCCL, no build tag or no usable driver */
  PROBE_DRIVER_OK,          /* the driver's CUDA is at least NCCL's */
  PROBE_DRIVER_MINOR_OLDER, /* same major, older minor: runs by minor version compatibility */
  PROBE_DRIVER_TOO_OLD      /* communicator init fails ("driver version is insufficient") */
} probe_driver_verdict;

typedef struct probe_driver_check {
  probe_driver_verdict verdict;
  int nccl_cuda;   /* CUDA version NCCL was built with, 1000*major + 10*minor; 0 unknown */
  int driver_cuda; /* the driver's cuDriverGetVersion; 0 unknown */
  char reason[256];
} probe_driver_check;

typedef enum probe_requirement_kind {
  PROBE_REQUIRE_VERSION,
  PROBE_REQUIRE_CAPABILITY,
  PROBE_REQUIRE_DRIVER, /* "driver-compatible" */
  PROBE_REQUIRE_PLUGINS /* "plugins-compatible" */
} probe_requirement_kind;

typedef struct probe_requirement {
  const char *text; /* as given on the command line */
  probe_requirement_kind kind;
  int version;    /* packed, for PROBE_REQUIRE_VERSION */
  int capability; /* for PROBE_REQUIRE_CAPABILITY */
  int met;
  char reason[320];
} probe_requirement;

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
  int verify;                    /* --verify: also the content hash of the file */
  char fingerprint_content[128]; /* ncclshim_nccl_fingerprint_content, with --verify */
  probe_driver_check driver;
  probe_requirement *requirements;
  int requirement_count;
  int unmet;                     /* how many requirements are not met */
  ncclshim_plugin_list *plugins; /* plugins.c */
} probe;

void probe_print_text(probe *p, FILE *out);
void probe_print_json(probe *p, FILE *out);

/* "yes", "no", "failed (CUDA_ERROR_...)" into buf. */
const char *probe_fact_text(const probe *p, ncclshim_cuda_fact fact, char *buf, size_t size);

/* Compares NCCL's build tag with the driver's CUDA version into p->driver. */
void probe_check_driver(probe *p);
/* "ok", "minor-older", "too-old", "unknown". */
const char *probe_driver_verdict_name(probe_driver_verdict verdict);

/* Parses one --require value into *r (text kept, not copied); 0 when it names nothing known. */
int probe_parse_requirement(const char *text, probe_requirement *r);
/* Fills met and reason of every requirement and p->unmet; call after probe_check_driver. */
void probe_check_requirements(probe *p);

/* plugins.c: the plugin list, its report, --require plugins-compatible. */
void probe_gather_plugins(probe *p);
void probe_text_plugins(const probe *p, FILE *out);
void probe_json_plugins(const probe *p, FILE *out);
void probe_check_plugins(const probe *p, probe_requirement *r);

#endif
