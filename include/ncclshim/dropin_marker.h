/* How a program or tool tells ncclshim's drop-in (libncclshim-nccl.so) from NCCL, even when
 * it is copied or linked under NCCL's name: the drop-in exports a variable of this name, NCCL
 * never does. ncclshim's search, its census and its doctor all read the name from here. */
#ifndef NCCLSHIM_DROPIN_MARKER_H
#define NCCLSHIM_DROPIN_MARKER_H

/* The identifier, to define the variable with, and its name as a string, to look it up. */
#define NCCLSHIM_DROPIN_MARKER ncclshim_dropin_identity
#define NCCLSHIM_DROPIN_MARKER_NAME "ncclshim_dropin_identity"

#endif
