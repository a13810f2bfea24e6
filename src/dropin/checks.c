/* The drop-in's two checks on what NCCL answers (docs/dropin.md):
 * - NCCLSHIM_AGREE: after each init that made a communicator, the ranks exchange their
 *   settings (ncclshim_nccl_agree); a job whose ranks differ stops there with
 *   ncclInvalidUsage rather than hanging or computing differently later.
 * - ncclDevCommCreate failing with ncclInvalidUsage: which versions met (the loaded NCCL's,
 *   and the headers the caller was built with), said on stderr and added to the thread's next
 *   ncclGetLastError. */
#include <stdio.h>

#include "src/internal.h"
#include "checks.h"
#include "dropin.h"
#include "ncclshim/comm_query.h"
#include "say.h"

enum { AGREE_MS = 60000 };

/* The entries the checks wrap, and NCCL's own (for its last error and ncclCommAbort). */
static ncclshim_nccl_table next;
static const ncclshim_nccl_table *nccl_own;
static int agree_on;

/* Read when the library loads, as the recorder's variables are. */
__attribute__((constructor)) static void read_agree(void) {
  agree_on = ncs_env_flag("NCCLSHIM_AGREE");
}

/* After an init that returned success or in-progress: wait for it, then agree. Only a
 * disagreement, or a rank that never took part (TIMEOUT), fails the init; a check that could
 * not run (no CUDA, say) is reported and the init's result kept. */
static ncclResult_t agreed(ncclResult_t result, ncclComm_t *newcomm, int nranks) {
  if ((result != ncclSuccess && result != ncclInProgress) || newcomm == NULL || *newcomm == NULL)
    return result;
  if (ncclshim_nccl_wait(NULL, *newcomm, AGREE_MS) != NCCLSHIM_OK)
    return result; /* the init failed: the program's own polling sees it */
  ncclshim_status status = ncclshim_nccl_agree(NULL, *newcomm, nranks, AGREE_MS);
  if (status == NCCLSHIM_OK) return result;
  if (status != NCCLSHIM_UNAVAILABLE && status != NCCLSHIM_TIMEOUT) {
    ncs_dropin_say("NCCLSHIM_AGREE: could not check (the init stands): ", ncclshim_last_error());
    return result;
  }
  ncs_dropin_say("NCCLSHIM_AGREE: ", ncclshim_last_error());
  nccl_own->ncclCommAbort(*newcomm);
  *newcomm = NULL;
  return ncclInvalidUsage;
}

static ncclResult_t agree_init_rank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  return agreed(next.ncclCommInitRank(comm, nranks, id, rank), comm, nranks);
}

static ncclResult_t agree_init_rank_config(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config) {
  return agreed(next.ncclCommInitRankConfig(comm, nranks, id, rank, config), comm, nranks);
}

static ncclResult_t agree_init_rank_scalable(ncclComm_t *comm, int nranks, int rank, int nid,
                                             ncclUniqueId *ids, ncclConfig_t *config) {
  return agreed(next.ncclCommInitRankScalable(comm, nranks, rank, nid, ids, config), comm, nranks);
}

static ncclResult_t explained_dev_comm_create(ncclComm_t comm,
                                              const ncclshim_dev_comm_requirements_t *reqs,
                                              ncclshim_dev_comm_t *out) {
  ncclResult_t result = next.ncclDevCommCreate(comm, reqs, out);
  if (result != ncclInvalidUsage) return result;
  char why[512];
  ncclshim_devapi_explain(ncclshim_nccl_default(), reqs, why, sizeof(why));
  ncs_dropin_say("ncclDevCommCreate: invalid usage: ", why);
  const char *own = nccl_own->ncclGetLastError(comm);
  ncs_set_error("%s%s%s", own != NULL ? own : "", own != NULL && own[0] ? "; " : "", why);
  ncs_dropin_message_unread = 1;
  return result;
}

void ncs_dropin_checks(ncclshim_nccl_table *table, const ncclshim_nccl_table *own) {
  next = *table;
  nccl_own = own;
  table->ncclDevCommCreate = explained_dev_comm_create;
  /* ncclCommInitAll is left alone: its communicators all live in this process. */
  if (!agree_on) return;
  table->ncclCommInitRank = agree_init_rank;
  table->ncclCommInitRankConfig = agree_init_rank_config;
  table->ncclCommInitRankScalable = agree_init_rank_scalable;
}
