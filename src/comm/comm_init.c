/* Creating a communicator (its bookkeeping is comm_state.c's). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclshim/diag.h"
#include "comm_internal.h"

static ncclshim_comm *new_comm(ncclshim_nccl *nccl, int rank, int nranks) {
  ncclshim_comm *comm = calloc(1, sizeof(*comm));
  if (comm == NULL) return NULL;
  pthread_condattr_t attr;
  int ok = pthread_condattr_init(&attr) == 0;
  ok = ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
       pthread_cond_init(&comm->abort_returned, &attr) == 0;
  pthread_condattr_destroy(&attr);
  if (!ok || pthread_mutex_init(&comm->lock, NULL) != 0) {
    if (ok) pthread_cond_destroy(&comm->abort_returned);
    free(comm);
    return NULL;
  }
  comm->nccl = nccl;
  comm->rank = rank;
  comm->nranks = nranks;
  atomic_init(&comm->refs, 1);
  return comm;
}

static ncclshim_status check_arguments(int nranks, const ncclUniqueId *id, int rank,
                                       const ncclshim_comm_options *options, ncclshim_comm **out) {
  const char *problem = NULL;
  if (out == NULL)
    problem = "out is NULL";
  else if (id == NULL)
    problem = "id is NULL";
  else if (nranks < 1)
    problem = "nranks is below 1";
  else if (rank < 0 || rank >= nranks)
    problem = "rank is outside [0, nranks)";
  else if (options->size < offsetof(ncclshim_comm_options, blocking) + sizeof(int))
    problem = "options->size is too small";
  if (problem == NULL) return NCCLSHIM_OK;
  return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_comm_init: %s (rank %d of %d)", problem,
                  rank, nranks);
}

/* ncclCommInitRankConfig with `blocking` set, or ncclCommInitRank where there is no config. */
static ncclResult_t start(ncclshim_nccl *nccl, ncclComm_t *raw, int nranks, const ncclUniqueId *id,
                          int rank, int blocking, const char **call) {
  const ncclshim_nccl_table *t = ncclshim_nccl_functions(nccl);
  if (!ncclshim_nccl_has_function(nccl, NCCLSHIM_FN_ncclCommInitRankConfig)) {
    *call = "ncclCommInitRank";
    return t->ncclCommInitRank(raw, nranks, *id, rank);
  }
  *call = "ncclCommInitRankConfig";
  struct ncclshim_nccl_config config;
  NCCLSHIM_NCCL_CONFIG_INIT(&config);
  ncclshim_nccl_config_set_int(nccl, &config, sizeof(config), NCCLSHIM_CONFIG_BLOCKING, blocking);
  return t->ncclCommInitRankConfig(raw, nranks, *id, rank, (ncclConfig_t *)&config);
}

ncclshim_status ncclshim_comm_init(ncclshim_nccl *nccl, int nranks, const ncclUniqueId *id,
                                   int rank, const ncclshim_comm_options *options,
                                   ncclshim_comm **out) {
  static const ncclshim_comm_options defaults = NCCLSHIM_COMM_OPTIONS_INIT;
  if (options == NULL) options = &defaults;
  ncclshim_status status = check_arguments(nranks, id, rank, options, out);
  if (status != NCCLSHIM_OK) return status;
  nccl = ncs_comm_resolve(nccl);
  if ((status = ncs_comm_usable(nccl, "ncclshim_comm_init")) != NCCLSHIM_OK) return status;
  int split = options->blocking == NCCLSHIM_COMM_SPLIT_BLOCKING;
  int blocking = options->blocking != NCCLSHIM_COMM_NONBLOCKING && !split;
  if (!blocking && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_NONBLOCKING_INIT)) {
    char need[16], have[16], why[256];
    return ncs_fail(
        NCCLSHIM_UNAVAILABLE,
        "ncclshim_comm_init: a non-blocking communicator needs NCCL >= %s (nonblocking-init); "
        "the loaded NCCL is %s (%s)",
        ncclshim_format_version(ncclshim_capability_version(NCCLSHIM_CAP_NONBLOCKING_INIT), need,
                                sizeof(need)),
        ncclshim_format_version(ncclshim_nccl_version(nccl), have, sizeof(have)),
        ncclshim_nccl_capability_reason(nccl, NCCLSHIM_CAP_NONBLOCKING_INIT, why, sizeof(why)));
  }
  if (split && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SPLIT)) {
    char need[16], have[16];
    return ncs_fail(NCCLSHIM_UNAVAILABLE,
                    "ncclshim_comm_init: NCCLSHIM_COMM_SPLIT_BLOCKING needs ncclCommSplit "
                    "(NCCL >= %s); the loaded NCCL "
                    "is %s",
                    ncclshim_format_version(ncclshim_capability_version(NCCLSHIM_CAP_SPLIT), need,
                                            sizeof(need)),
                    ncclshim_format_version(ncclshim_nccl_version(nccl), have, sizeof(have)));
  }
  ncclshim_comm *comm = new_comm(nccl, rank, nranks);
  if (comm == NULL) return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_comm_init: out of memory");
  ncclComm_t raw = NULL;
  const char *call = NULL;
  ncclResult_t r = start(nccl, &raw, nranks, id, rank, blocking, &call);
  if (r != ncclSuccess && r != ncclInProgress) {
    status = ncclshim_nccl_check(nccl, r, call);
  } else if (raw == NULL) {
    status = ncs_fail(NCCLSHIM_NCCL_ERROR, "%s returned %s but no communicator", call,
                      ncclshim_nccl_result_name(r));
  }
  if (status != NCCLSHIM_OK) {
    ncs_comm_unref(comm);
    return status;
  }
  comm->comm = raw;
  comm->split_wanted = split;
  comm->state = r == ncclInProgress ? NCCLSHIM_COMM_INITIALIZING : NCCLSHIM_COMM_READY;
  *out = comm;
  return NCCLSHIM_OK;
}
