/* What the drop-in's files share: the thread-local model, the unread-message flag. */
#ifndef NCCLSHIM_DROPIN_H
#define NCCLSHIM_DROPIN_H

/* Thread-local variables of the drop-in: initial-exec, reached from the thread pointer with
 * no call, and no __tls_get_addr to make the library need ld.so. A library loaded at start-up
 * (linked, LD_PRELOAD or LD_AUDIT) always has room for them; a dlopen gets them from glibc's
 * reserve. */
#define NCCLSHIM_THREAD_MODEL __attribute__((tls_model("initial-exec")))

/* Set when the thread's ncclshim_last_error holds a message of the drop-in's own (a function
 * the loaded NCCL lacks, a check's finding): the next ncclGetLastError returns it, once. */
extern __thread int ncs_dropin_message_unread NCCLSHIM_THREAD_MODEL;

#endif
