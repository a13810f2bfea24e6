/* The NCCL handle and the pieces of the binding that share it. */
#ifndef NCCLSHIM_NCCL_HANDLE_H
#define NCCLSHIM_NCCL_HANDLE_H

#include <pthread.h>

#include "src/handle.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

struct ncclshim_nccl {
  ncs_handle core;           /* first: the lifecycle shared with the CUDA binding */
  ncclshim_nccl_table table; /* what ncclshim_nccl_functions hands out */
  int version;               /* packed; 0 when none */
  int version_code;          /* raw ncclGetVersion answer */
  uint64_t capabilities;
  unsigned char present[NCCLSHIM_NCCL_FUNCTION_COUNT];
  int min_version;
  int refuse_second_copy;
  void *get_version;           /* its ncclGetVersion: where the library lies in memory */
  ncclshim_nccl_entry *census; /* every NCCL mapped when it was opened */
  size_t census_count;
  pthread_mutex_t lazy_lock; /* guards what is read from the file on first request: */
  char *build;               /* the build tag */
  uint64_t file_hash;        /* the contents' hash, for the fingerprint */
  int file_hash_done;
};

/* The table every handle starts with: each entry reports that NCCL is not loaded. */
extern const ncclshim_nccl_table ncs_absent_table;
/* Fill the entries the library lacks with stubs that report the missing function. */
void ncs_fill_missing(ncclshim_nccl *nccl);

/* Capabilities of a bound library, from its version and the functions found. */
uint64_t ncs_compute_capabilities(const ncclshim_nccl *nccl);

/* The NCCL binding: its search (steps in order) and accept step. */
extern const ncs_binding ncs_nccl_binding;

/* The NCCL search's candidates, in its order, with their step and why, opening nothing
 * (loader/search.h, ncshl_search_list): what ncclshim_nccl_open(path) would try now. With
 * with_overrides 0, the API path and NCCLSHIM_NCCL_LIBRARY are left out (what the machine
 * offers, as the visible list shows it). Each candidate: path, step (the numbers of
 * ncclshim_found_via), reach (NCSHL_REACH_FILE for a file; MAPPED, PROGRAM, NAME or a NONE
 * note otherwise), outcome (NCSHL_OK, or the note's ABSENT/BAD_REQUEST) and reason. 0, or -1
 * when out of memory; free with ncshl_candidates_free. */
int ncs_nccl_candidates(const char *path, int with_overrides, ncshl_candidates *out);

/* The directories of the ACTIVE_ENV and WELL_KNOWN steps, each with why it is there
 * (docs/loader.md gives the order): the active environment's (VIRTUAL_ENV, CONDA_PREFIX, the
 * prefixes of the running program, the user site), and the well-known places (NCCL_HOME,
 * CUDA_HOME). */
void ncs_nccl_environment_places(ncshl_list *dirs);
void ncs_nccl_places(ncshl_list *dirs);

/* Every NCCL mapped in the process now (see ncclshim_nccl_census_count), the one whose
 * ncclGetVersion is `chosen` marked (its version, `chosen_version`, is not asked again); each
 * other one's version asked from its own ncclGetVersion. 0, or -1 when out of memory. */
int ncs_nccl_take_census(const void *chosen, int chosen_version, ncclshim_nccl_entry **entries,
                         size_t *count);
void ncs_nccl_entries_free(ncclshim_nccl_entry *entries, size_t count);

/* The version and "+cudaX.Y" tag of NCCL's banner ("NCCL version 2.28.9+cuda13.0") in the
 * file at `path`, read from its .rodata section (the whole file when it has no section
 * table). Returns the packed version, 0 when no banner was found; *tag (may be NULL) gets a
 * malloc'd tag, "" when the banner has none, NULL when none was found. */
int ncs_nccl_read_banner(const char *path, char **tag);

#endif
