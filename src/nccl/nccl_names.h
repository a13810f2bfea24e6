/* Names the NCCL binding, its census and the drop-in share, each written once here. */
#ifndef NCCLSHIM_NCCL_NAMES_H
#define NCCLSHIM_NCCL_NAMES_H

/* The SONAME every NCCL 2.x release carries. */
#define NCCLSHIM_NCCL_SONAME "libnccl.so.2"

/* The drop-in's marker (NCCLSHIM_DROPIN_MARKER, _NAME): a search or census that meets an
 * object defining it never takes that object for NCCL. Public: the doctor reads it too. */
#include "ncclshim/dropin_marker.h"

#endif
