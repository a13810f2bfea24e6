/* The hang dump (record_hang.c), fed by the recorder while NCCLSHIM_RECORD_HANG_MS is set. */
#ifndef NCCLSHIM_DROPIN_RECORD_HANG_H
#define NCCLSHIM_DROPIN_RECORD_HANG_H

#include <stdint.h>

/* An operation enqueued on `stream` (not captured): its call's ring index plus one, and its
 * sequence number. Inside a group it waits for the group's end. */
void ncs_rec_hang_op(const void *stream, int fn, uint64_t index, uint64_t seq);
/* ncclGroupStart or ncclGroupEnd returned; `succeeded` 0 drops the group's operations. */
void ncs_rec_hang_group(int fn, int succeeded);
/* In a forked child: the lock made afresh. */
void ncs_rec_hang_forked(void);

#endif
