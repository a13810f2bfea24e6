/* Names the NCCL binding, its census and the drop-in share, each written once here. */
#ifndef NCCLSHIM_NCCL_NAMES_H
#define NCCLSHIM_NCCL_NAMES_H

/* The SONAME every NCCL 2.x release carries. */
#define NCCLSHIM_NCCL_SONAME "libnccl.so.2"

/* The drop-in exports a variable of this name (define it with NCCLSHIM_DROPIN_MARKER); a
 * search or census that meets an object defining it never takes that object for NCCL. */
#define NCCLSHIM_DROPIN_MARKER ncclshim_dropin_identity
#define NCCLSHIM_DROPIN_MARKER_NAME "ncclshim_dropin_identity"

#endif
