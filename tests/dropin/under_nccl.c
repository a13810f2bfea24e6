/* The functions of the NCCL under the drop-in that do more than count (see under_generic.c):
 * its version, communicators, an asynchronous error, and ncclBcast calling ncclBroadcast
 * through its own public name, as NCCL 2.x does. */
#include <stdlib.h>

#include "under.h"

struct ncclComm {
  int rank, nranks;
};
static int async_result;

static ncclComm_t make(int rank, int nranks) {
  ncclComm_t comm = malloc(sizeof(*comm));
  if (comm != NULL) *comm = (struct ncclComm){rank, nranks};
  return comm;
}

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
  *comm = make(rank, nranks);
  return *comm != NULL ? ncclSuccess : ncclSystemError;
}

UNDER_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                        ncclConfig_t *config) {
  (void)config;
  ncclResult_t result = under_answer(NCCLSHIM_FN_ncclCommSplit);
  if (result != ncclSuccess) return result;
  /* A rank that opts out gets no communicator, as from NCCL. */
  *newcomm = color == NCCL_SPLIT_NOCOLOR ? NULL : make(key, comm->nranks);
  return color == NCCL_SPLIT_NOCOLOR || *newcomm != NULL ? ncclSuccess : ncclSystemError;
}

UNDER_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  under_answer(NCCLSHIM_FN_ncclCommUserRank);
  *rank = comm->rank;
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  under_answer(NCCLSHIM_FN_ncclCommCount);
  *count = comm->nranks;
  return ncclSuccess;
}

UNDER_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return under_answer(NCCLSHIM_FN_ncclCommDestroy);
}

UNDER_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  free(comm);
  return under_answer(NCCLSHIM_FN_ncclCommAbort);
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
