/* The interposer's report (interpose.c), called by the drop-in once NCCL is loaded. */
#ifndef NCCLSHIM_DROPIN_INTERPOSE_H
#define NCCLSHIM_DROPIN_INTERPOSE_H

#include "ncclshim/ncclshim.h"

/* Warn when the program's own NCCL is another file than the one loaded (two NCCLs in one
 * process), and with NCCLSHIM_DEBUG say whether the drop-in is interposing on an NCCL that was
 * already loaded (LD_PRELOAD over a program linked to libnccl). */
void ncs_dropin_report(const ncclshim_nccl *nccl);

#endif
