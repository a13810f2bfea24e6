/* Finishing a communicator's work within a deadline: init, operations, group ends, streams. */
#include <stdio.h>

#include "comm_internal.h"

/* OK when the communicator is in a state that can be waited on; otherwise why not. */
static ncclshim_status waitable(ncclshim_comm *comm, const char *who, int timeout_ms) {
  if (comm == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: comm is NULL", who);
  if (timeout_ms < 0) return ncs_negative_timeout(who, timeout_ms);
  ncclshim_comm_state state = ncs_comm_get_state(comm);
  switch (state) {
  case NCCLSHIM_COMM_INITIALIZING:
  case NCCLSHIM_COMM_READY:
  case NCCLSHIM_COMM_FINALIZING:
    return NCCLSHIM_OK;
  case NCCLSHIM_COMM_FAILED:
    return ncs_comm_failed(comm, who);
  default:
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: the communicator is %s", who,
                    ncclshim_comm_state_name(state));
  }
}

/* What a wait on a communicator in `state` is waiting for. */
static const char *pending_in(ncclshim_comm_state state) {
  switch (state) {
  case NCCLSHIM_COMM_INITIALIZING:
    return "its init";
  case NCCLSHIM_COMM_FINALIZING:
    return "ncclCommFinalize";
  default:
    return "its enqueued operations";
  }
}

/* A wait that failed says which communicator it was, the state it was in (and went to), and
 * what it waited for: with several communicators and a dead peer, the bare cause is not
 * enough to act on. */
static ncclshim_status name_the_wait(ncclshim_comm *comm, ncclshim_status status, const char *who,
                                     ncclshim_comm_state before, const char *pending) {
  if (status == NCCLSHIM_OK) return status;
  char cause[1536];
  snprintf(cause, sizeof(cause), "%s", ncclshim_last_error());
  int code = ncclshim_last_nccl_result(); /* the same failure, said with more context */
  ncclshim_comm_state after = ncs_comm_get_state(comm);
  return ncs_fail_code(status, code, "%s%scommunicator rank %d of %d (%s%s%s), waiting for %s: %s",
                       who, who[0] ? ": " : "", comm->rank, comm->nranks,
                       ncclshim_comm_state_name(before), after != before ? ", now " : "",
                       after != before ? ncclshim_comm_state_name(after) : "", pending, cause);
}

ncclshim_status ncs_comm_wait_deadline(ncclshim_comm *comm, int64_t deadline_ns, int timeout_ms) {
  ncclshim_comm_state before = ncs_comm_get_state(comm);
  ncclResult_t seen = ncclSuccess;
  ncclshim_status status =
      ncs_wait_until(comm->nccl, comm->comm, comm, deadline_ns, timeout_ms, &seen);
  if (status == NCCLSHIM_OK && before == NCCLSHIM_COMM_INITIALIZING && comm->split_wanted)
    status = ncs_comm_split_child(comm, deadline_ns, timeout_ms, &seen);
  return name_the_wait(comm, ncs_comm_note(comm, status, seen), "", before, pending_in(before));
}

ncclshim_status ncclshim_comm_wait(ncclshim_comm *comm, int timeout_ms) {
  ncclshim_status status = waitable(comm, "ncclshim_comm_wait", timeout_ms);
  if (status != NCCLSHIM_OK) return status;
  return ncs_comm_wait_deadline(comm, ncs_deadline_ns(timeout_ms), timeout_ms);
}

ncclshim_status ncclshim_comm_check(ncclshim_comm *comm, ncclResult_t result, const char *call,
                                    int timeout_ms) {
  ncclshim_status status = waitable(comm, "ncclshim_comm_check", timeout_ms);
  if (status != NCCLSHIM_OK) return status;
  if (result == ncclSuccess) return NCCLSHIM_OK;
  if (result != ncclInProgress)
    return name_the_wait(comm, ncclshim_nccl_check(comm->nccl, result, call), "",
                         ncs_comm_get_state(comm), call ? call : "an NCCL call");
  return ncs_comm_wait_deadline(comm, ncs_deadline_ns(timeout_ms), timeout_ms);
}

ncclshim_status ncclshim_comm_group_end(ncclshim_nccl *nccl, ncclshim_comm *const *comms, int count,
                                        int timeout_ms) {
  nccl = ncs_comm_resolve(nccl);
  if (count < 0 || (count > 0 && comms == NULL) || timeout_ms < 0)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_comm_group_end: count %d, comms %s, timeout %d ms", count,
                    comms ? "given" : "NULL", timeout_ms);
  for (int i = 0; i < count; i++) /* before NCCL runs anything */
    if (comms[i] == NULL)
      return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                      "ncclshim_comm_group_end: comms[%d] is NULL (ncclGroupEnd not called: "
                      "the group is still open)",
                      i);
  ncclshim_status status = ncs_comm_usable(nccl, "ncclshim_comm_group_end");
  if (status != NCCLSHIM_OK) return status;
  int64_t deadline = ncs_deadline_ns(timeout_ms);
  ncclResult_t r = ncclshim_nccl_functions(nccl)->ncclGroupEnd();
  for (int i = 0; i < count; i++) atomic_fetch_add(&comms[i]->group_ends, 1);
  if (r != ncclSuccess && r != ncclInProgress) return ncclshim_nccl_check(nccl, r, "ncclGroupEnd");
  /* Each communicator is checked as ncclshim_comm_check does, also when NCCL finished at once:
   * a failed one reports its failure, a torn-down one is refused. */
  for (int i = 0; i < count; i++) {
    if ((status = waitable(comms[i], "ncclshim_comm_group_end", timeout_ms)) != NCCLSHIM_OK)
      return status;
    if (r == ncclInProgress &&
        (status = ncs_comm_wait_deadline(comms[i], deadline, timeout_ms)) != NCCLSHIM_OK)
      return status;
  }
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_comm_wait_stream(ncclshim_comm *comm, const ncclshim_cuda *cuda,
                                          CUstream stream, int timeout_ms) {
  static const char who[] = "ncclshim_comm_wait_stream";
  ncclshim_status status = waitable(comm, who, timeout_ms);
  if (status != NCCLSHIM_OK) return status;
  if (cuda == NULL) cuda = ncclshim_cuda_default();
  ncclshim_comm_state before = ncs_comm_get_state(comm);
  ncclResult_t seen = ncclSuccess;
  status = ncs_wait_stream_until(cuda, stream, comm->nccl, comm->comm, comm,
                                 ncs_deadline_ns(timeout_ms), timeout_ms, "still running",
                                 " and the communicator reports no error", &seen);
  return name_the_wait(comm, ncs_comm_note(comm, status, seen), who, before, "the stream's work");
}
