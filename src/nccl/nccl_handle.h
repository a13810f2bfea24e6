/* The NCCL handle and the pieces of the binding that share it. */
#ifndef NCCLSHIM_NCCL_HANDLE_H
#define NCCLSHIM_NCCL_HANDLE_H

#include <pthread.h>

#include "../handle.h"
#include "ncclshim/ncclshim.h"

struct ncclshim_nccl {
  ncclshim_handle core;      /* first: the lifecycle shared with the CUDA binding */
  ncclshim_nccl_table table; /* what ncclshim_nccl_functions hands out */
  int version;               /* packed; 0 when none */
  int version_code;          /* raw ncclGetVersion answer */
  uint64_t capabilities;
  unsigned char present[NCCLSHIM_NCCL_FUNCTION_COUNT];
  int min_version;
  pthread_mutex_t lazy_lock; /* guards what is read from the file on first request: */
  char *build;               /* the build tag */
  uint64_t file_hash;        /* the contents' hash, for the fingerprint */
  int file_hash_done;
};

/* The table every handle starts with: each entry reports that NCCL is not loaded. */
extern const ncclshim_nccl_table ncclshim_absent_table;
/* Fill the entries the library lacks with stubs that report the missing function. */
void ncclshim_fill_missing(ncclshim_nccl *nccl);

/* Capabilities of a bound library, from its version and the functions found. */
uint64_t ncclshim_compute_capabilities(const ncclshim_nccl *nccl);

/* Well-known install directories, from the environment and the running prefix: a malloc'd
 * NULL-terminated array of malloc'd strings (the loader's search frees it). */
char **ncclshim_nccl_places(void);

#endif
