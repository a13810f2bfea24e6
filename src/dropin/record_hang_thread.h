/* The hang dump's checking thread (record_hang_thread.c). */
#ifndef NCCLSHIM_DROPIN_RECORD_HANG_THREAD_H
#define NCCLSHIM_DROPIN_RECORD_HANG_THREAD_H

/* Under ncs_hang.lock: 1 once the thread runs in this process (started on first use; a
 * forked child forgets its parent's entries and starts its own), 0 when it cannot run. */
int ncs_hang_ready(void);

#endif
