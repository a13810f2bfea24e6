/* What the drop-in's files share. */
#ifndef NCCLSHIM_DROPIN_H
#define NCCLSHIM_DROPIN_H

#include "ncclshim/ncclshim.h"

/* Thread-local variables of the drop-in: initial-exec, reached from the thread pointer with
 * no call, and no __tls_get_addr to make the library need ld.so. A library loaded at start-up
 * (linked, or LD_PRELOAD) always has room for them; a dlopen gets them from glibc's reserve. */
#define NCCLSHIM_THREAD_MODEL __attribute__((tls_model("initial-exec")))

/* Once NCCL is loaded: warn when the program's own NCCL is another file than the one loaded
 * (two NCCLs in one process), and with NCCLSHIM_DEBUG say whether the drop-in is interposing
 * on an NCCL that was already loaded (LD_PRELOAD over a program linked to libnccl). */
void ncclshim_dropin_report(const ncclshim_nccl *nccl);

#endif
