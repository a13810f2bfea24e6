/* ncclshim's header first: it stands in for nccl.h, so the nccl.h included after it is
 * skipped and the program still compiles. Exports ncclshim's values for the comparison. */
#include "ncclshim/ncclshim.h"
#include <nccl.h>

#include "abi_values.h"

#ifndef NCCLSHIM_PROVIDES_NCCL_H
#error "included first, ncclshim's header must provide nccl.h's types"
#endif

#define CONFIG_OFFSET(f) {"ncclConfig_t." #f, (long long)offsetof(ncclConfig_t, f)},
const abi_value ours[] = {
    ABI_COMMON(ABI_VALUE) ABI_VALUE(ncclBfloat16) ABI_VALUE(ncclTimeout) ABI_VALUE(ncclFloat8e4m3)
        ABI_VALUE(ncclFloat8e5m2) ABI_VALUE(NCCL_WIN_DEFAULT) ABI_VALUE(NCCL_WIN_COLL_SYMMETRIC)
            ABI_VALUE(NCCL_WIN_STRICT_ORDERING) ABI_VALUE(NCCL_WIN_REQUIRED_ALIGNMENT)
                ABI_VALUE(NCCL_CTA_POLICY_DEFAULT) ABI_VALUE(NCCL_CTA_POLICY_EFFICIENCY)
                    ABI_VALUE(NCCL_CTA_POLICY_ZERO) ABI_VALUE(NCCL_SHRINK_DEFAULT) ABI_VALUE(
                        NCCL_SHRINK_ABORT) ABI_VALUE(NCCL_REVOKE_DEFAULT) ABI_SIZE(ncclSimInfo_t)
                        ABI_OFFSET(ncclSimInfo_t, estimatedTime) ABI_SIZE(ncclConfig_t)
#define OFFSET_(id, field, kind, version) CONFIG_OFFSET(field)
                            NCCLSHIM_CONFIG_FIELDS(OFFSET_) CONFIG_OFFSET(size) CONFIG_OFFSET(magic)
                                CONFIG_OFFSET(version)
                                    ABI_FROM_2_32_3(ABI_VALUE, ABI_SIZE, ABI_OFFSET){NULL, 0}};

ABI_DEFINE_INITIALIZERS(abi_initializers_ours)
