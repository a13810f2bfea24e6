/* The hang dump's checking thread and its tracker (record_hang_thread.c). */
#ifndef NCCLSHIM_DROPIN_RECORD_HANG_THREAD_H
#define NCCLSHIM_DROPIN_RECORD_HANG_THREAD_H

#include "record_cuda.h"

/* The tracker that the enqueueing side records into, the checking thread started on first
 * use in this process (a forked child starts its own, with a tracker of its own); NULL once
 * the dump fired, at exit, or when the thread cannot run (said once). */
ncs_tracker *ncs_hang_tracker(const ncs_track_driver *d);
/* In a forked child (pthread_atfork): the parent's thread and tracker are not its own. */
void ncs_hang_thread_forked(void);

#endif
