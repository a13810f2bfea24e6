/* The functions of the NCCL under the drop-in that do more than count (see under_generic.c):
 * its version, communicators, an asynchronous error, and ncclBcast calling ncclBroadcast
 * through its own public name, as NCCL 2.x does. */
#include "under.h"

static struct ncclComm { int rank, nranks; } comms[16];
static int made;
static int async_result;

UNDER_EXPORT void under_set_async(int result) { async_result = result; }

UNDER_EXPORT ncclResult_t ncclGetVersion(int *version) {
  under_answer(NCCLSHIM_FN_ncclGetVersion);
  *version = 22809;
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                           int rank) {
  (void)commId;
  ncclResult_t result = under_answer(NCCLSHIM_FN_ncclCommInitRank);
  if (result != ncclSuccess) return result;
  if (made == 16) return ncclSystemError;
  comms[made] = (struct ncclComm){rank, nranks};
  *comm = &comms[made++];
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                        ncclConfig_t *config) {
  (void)color, (void)config;
  ncclResult_t result = under_answer(NCCLSHIM_FN_ncclCommSplit);
  if (result != ncclSuccess) return result;
  if (made == 16) return ncclSystemError;
  comms[made] = (struct ncclComm){key, comm->nranks};
  *newcomm = &comms[made++];
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  (void)comm;
  under_answer(NCCLSHIM_FN_ncclCommGetAsyncError);
  *asyncError = (ncclResult_t)async_result;
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                    ncclComm_t comm, cudaStream_t stream) {
  under_answer(NCCLSHIM_FN_ncclBcast);
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
