/* ncclshim's help with ncclConfig_t and ncclCollConfig_t: each field's first NCCL release,
 * initialisers that any NCCL reads right (no NCCL needed), and checks and setters that refuse
 * a field the loaded NCCL does not honour. Part of the core API: ncclshim.h includes it. */
#ifndef NCCLSHIM_CONFIG_H
#define NCCLSHIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* The handle type and statuses. ncclshim.h includes this file at its end, so either may come
 * first: the include guards stop the loop. */
#include "ncclshim/ncclshim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ncclConfig_t ------------------------------------------------------------------ */

/* X(ID, field, kind INT or PTR, first version that honours it) */
/* clang-format off */
#define NCCLSHIM_CONFIG_FIELDS(X) \
  X(BLOCKING,              blocking,            INT, 21400) \
  X(CGA_CLUSTER_SIZE,      cgaClusterSize,      INT, 21700) \
  X(MIN_CTAS,              minCTAs,             INT, 21700) \
  X(MAX_CTAS,              maxCTAs,             INT, 21700) \
  X(NET_NAME,              netName,             PTR, 21700) \
  X(SPLIT_SHARE,           splitShare,          INT, 21800) \
  X(TRAFFIC_CLASS,         trafficClass,        INT, 22600) \
  X(COMM_NAME,             commName,            PTR, 22700) \
  X(COLLNET_ENABLE,        collnetEnable,       INT, 22700) \
  X(CTA_POLICY,            CTAPolicy,           INT, 22700) \
  X(SHRINK_SHARE,          shrinkShare,         INT, 22700) \
  X(NVLS_CTAS,             nvlsCTAs,            INT, 22700) \
  X(NCHANNELS_PER_NET_PEER, nChannelsPerNetPeer, INT, 22800) \
  X(NVLINK_CENTRIC_SCHED,  nvlinkCentricSched,  INT, 22800) \
  X(GRAPH_USAGE_MODE,      graphUsageMode,      INT, 22902) \
  X(NUM_RMA_CTX,           numRmaCtx,           INT, 22902) \
  X(MAX_P2P_PEERS,         maxP2pPeers,         INT, 23003) \
  X(GRAPH_STREAM_ORDERING, graphStreamOrdering, INT, 23007) \
  X(LAUNCH_ORDER_IMPLICIT, launchOrderImplicit, INT, 23203) \
  X(NUM_RMA_SIG,           numRmaSig,           INT, 23203) \
  X(RMA_EAGER_INIT,        rmaEagerInit,        INT, 23203) \
  X(HOST_CFT_MODE,         hostCftMode,         INT, 23203) \
  X(NVLS_HOST_MODE,        nvlsHostMode,        INT, 23203)
/* clang-format on */

#define NCCLSHIM_CONFIG_FIELD_ENUM_(id, field, kind, version) NCCLSHIM_CONFIG_##id,
typedef enum ncclshim_config_field {
  NCCLSHIM_CONFIG_FIELDS(NCCLSHIM_CONFIG_FIELD_ENUM_) NCCLSHIM_CONFIG_FIELD_COUNT
} ncclshim_config_field;

/* Fill the caller's ncclConfig_t (from any nccl.h, or ncclshim's) so that any NCCL reads it
 * right: every field UNDEF, magic set, size = min(config_size, the 2.32.3 layout's 120),
 * version = that layout's release. Nothing past config_size is written. An older library
 * reads only its own prefix; a newer one fills what lies past `size` with its defaults.
 * Use the macro, which passes the size of the caller's type. Needs no NCCL.
 * Returns OK; INVALID_ARGUMENT when config is NULL or config_size does not reach the
 * `blocking` field (the header: size, magic, version). */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_init(void *config, size_t config_size);
#define NCCLSHIM_NCCL_CONFIG_INIT(config) ncclshim_nccl_config_init((config), sizeof(*(config)))

/* OK when the loaded library honours the field and it lies inside a config of config_size
 * bytes; otherwise UNAVAILABLE with the reason in ncclshim_last_error() (the field lies past
 * config_size, no NCCL is loaded, or the loaded one predates the field), INVALID_ARGUMENT
 * for an unknown field. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_check(const ncclshim_nccl *nccl,
                                                        size_t config_size,
                                                        ncclshim_config_field field);
/* Set a field of a config made by ncclshim_nccl_config_init, after the checks of
 * ncclshim_nccl_config_check (same UNAVAILABLE answers). Also INVALID_ARGUMENT: config NULL
 * or too small, not initialised (no magic), or the wrong kind (_int for an int field, _str
 * for a string field: netName, commName). A refused field is left untouched (UNDEF). _str
 * stores the pointer: the string must outlive the communicator's creation. */
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_int(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field, int value);
NCCLSHIM_API ncclshim_status ncclshim_nccl_config_set_str(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_config_field field,
                                                          const char *value);
/* "blocking"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_config_field_name(ncclshim_config_field field);

/* ---- ncclCollConfig_t: the per-collective config of the ...Config collectives ------- */

/* X(ID, field, kind, first version that honours it). Kinds: INT, PTR (a string: _set_str),
 * U64 (_set_u64) and HANDLE (a pointer NCCL uses as is: the ncclConfigExt_t list, the CUDA
 * event; _set_ptr). */
/* clang-format off */
#define NCCLSHIM_COLL_CONFIG_FIELDS(X) \
  X(EXT,                     ext,                   HANDLE, 23203) \
  X(MIN_CTAS,                minCTAs,               INT,    23203) \
  X(MAX_CTAS,                maxCTAs,               INT,    23203) \
  X(NVLS_CTAS,               nvlsCTAs,              INT,    23203) \
  X(CGA_CLUSTER_SIZE,        cgaClusterSize,        INT,    23203) \
  X(ALG_SELECTION,           algSelection,          PTR,    23203) \
  X(FORCE_ALG_SELECTION,     forceAlgSelection,     INT,    23203) \
  X(CTA_POLICY,              CTAPolicy,             INT,    23203) \
  X(USER_PROFILER_TAG,       userProfilerTag,       U64,    23203) \
  X(LAUNCH_COMPLETION_EVENT, launchCompletionEvent, HANDLE, 23203)
/* clang-format on */

#define NCCLSHIM_COLL_CONFIG_FIELD_ENUM_(id, field, kind, version) NCCLSHIM_COLL_CONFIG_##id,
typedef enum ncclshim_coll_config_field {
  NCCLSHIM_COLL_CONFIG_FIELDS(NCCLSHIM_COLL_CONFIG_FIELD_ENUM_) NCCLSHIM_COLL_CONFIG_FIELD_COUNT
} ncclshim_coll_config_field;

/* The same as ncclshim_nccl_config_init for an ncclCollConfig_t (from 2.32.3's nccl.h, or
 * ncclshim's): NCCL's defaults (ints UNDEF, forceAlgSelection 1, userProfilerTag 0,
 * pointers NULL), magic set, size = min(config_size, the 2.32.3 layout's 72), version = that
 * layout's release; nothing past config_size written. Needs no NCCL. OK; INVALID_ARGUMENT
 * when config is NULL or config_size does not reach `ext` (the header). */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_init(void *config, size_t config_size);
#define NCCLSHIM_COLL_CONFIG_INIT(config) ncclshim_coll_config_init((config), sizeof(*(config)))
/* As ncclshim_nccl_config_check: OK when the loaded NCCL honours the field (it has the
 * ...Config collectives: 2.32.3 and later) and it lies inside config_size; UNAVAILABLE with
 * the reason otherwise; INVALID_ARGUMENT for an unknown field. */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_check(const ncclshim_nccl *nccl,
                                                        size_t config_size,
                                                        ncclshim_coll_config_field field);
/* Set a field of a config made by ncclshim_coll_config_init, after those checks. Also
 * INVALID_ARGUMENT: config NULL or too small, not initialised, or the wrong kind for the field.
 * A refused field is left as it was. _str and _ptr store the pointer: the string, the
 * ncclConfigExt_t list and the event must outlive the calls that use the config. */
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_int(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          int value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_str(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          const char *value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_u64(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          uint64_t value);
NCCLSHIM_API ncclshim_status ncclshim_coll_config_set_ptr(const ncclshim_nccl *nccl, void *config,
                                                          size_t config_size,
                                                          ncclshim_coll_config_field field,
                                                          void *value);
/* "algSelection"; NULL for an unknown value. */
NCCLSHIM_API const char *ncclshim_coll_config_field_name(ncclshim_coll_config_field field);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_CONFIG_H */
