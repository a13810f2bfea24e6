/* The hang dump (record_hang.c), fed by the recorder while NCCLSHIM_RECORD_HANG_MS is set. */
#ifndef NCCLSHIM_DROPIN_RECORD_HANG_H
#define NCCLSHIM_DROPIN_RECORD_HANG_H

#include "record.h"

/* A recorded call returned `result`: an operation enqueued (not captured) gets its event,
 * inside a group at the group's end, on a non-blocking communicator once NCCL says it is
 * launched; the group calls, ncclCommGetAsyncError and the calls that end a communicator
 * settle what waits. */
void ncs_rec_hang_call(const ncs_rec_call *call, int result);
/* In a forked child: the lock made afresh. */
void ncs_rec_hang_forked(void);

#endif
