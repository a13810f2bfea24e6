/* ncclshim's header first, as C++17: it stands in for nccl.h, so the nccl.h included after it
 * is skipped and the program still compiles (abi_ours.c does the same in C11). */
#include "ncclshim/ncclshim.h"
#include <nccl.h>

#ifndef NCCLSHIM_PROVIDES_NCCL_H
#error "included first, ncclshim's header must provide nccl.h's types"
#endif

static_assert(sizeof(ncclConfig_t) == sizeof(struct ncclshim_nccl_config), "one ncclConfig_t");
