/* The one list of NCCL host functions (nccl.h and nccl_device.h, 2.18 -> 2.32.3). Everything
 * else is generated from it: the table's fields, the name strings, loading, the "unavailable"
 * stubs and the drop-in library's exports. Adding a function is one line.
 *
 * X(name, first_version, policy, role, returns, nparams, ((type, name), ...))
 *   first_version  the release that first exported it, as MAJOR*10000 + MINOR*100 + PATCH
 *                  (20300 = "already in 2.3", the oldest release anyone still meets)
 *   policy         REQUIRED: a table without it is refused (MISSING_SYMBOLS);
 *                  OPTIONAL: missing means that function (and its capability) is unavailable;
 *                  DEVICE: OPTIONAL, and declared by nccl_device.h rather than nccl.h (the
 *                  device API's host functions), so ncclshim standing in for nccl.h does not
 *                  declare its NCCL prototype
 *   role           QUERY: reads state and changes none, or only computes from its arguments
 *                  (a watchdog may call it all the time, so the drop-in's flight recorder
 *                  keeps it only when it fails); ACTION: everything else
 *   returns        RESULT (ncclResult_t), STRING (const char *), VOID, INT (int) or TEAM
 *                  (ncclshim_team_t, NCCL's ncclTeam_t: three ints by value)
 *
 * An "unavailable" entry (no NCCL, or a library without the function) returns
 * ncclInvalidUsage / ncclInvalidArgument for RESULT, the message for STRING, -1 for INT (no
 * rank or slot count is negative) and the empty team {nRanks 0, rank -1, stride 0} for TEAM;
 * each leaves a message for ncclshim_last_error().
 *
 * The device API's rows forward pointers to NCCL's structs without reading them (their layout
 * changes between releases: nccl_abi.h declares them incomplete); ncclTeam_t and
 * ncclMultimemHandle_t pass by value with NCCL's layout; ncclTeamCft's `mode` is NCCL's
 * ncclCftTeamMode_t, a plain enum (int). */
#ifndef NCCLSHIM_NCCL_FUNCTIONS_H
#define NCCLSHIM_NCCL_FUNCTIONS_H

#include "ncclshim/nccl_abi.h"
#include "ncclshim/pp.h"

/* clang-format off */
#define NCCLSHIM_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion,                   20300, REQUIRED, QUERY,  RESULT,  1, ((int *, version))) \
  X(ncclGetUniqueId,                  20300, REQUIRED, ACTION, RESULT,  1, ((ncclUniqueId *, uniqueId))) \
  X(ncclCommInitRank,                 20300, REQUIRED, ACTION, RESULT,  4, ((ncclComm_t *, comm), (int, nranks), (ncclUniqueId, commId), (int, rank))) \
  X(ncclCommInitAll,                  20300, OPTIONAL, ACTION, RESULT,  3, ((ncclComm_t *, comms), (int, ndev), (const int *, devlist))) \
  X(ncclCommInitRankConfig,           21400, OPTIONAL, ACTION, RESULT,  5, ((ncclComm_t *, comm), (int, nranks), (ncclUniqueId, commId), (int, rank), (ncclConfig_t *, config))) \
  X(ncclCommInitRankScalable,         22304, OPTIONAL, ACTION, RESULT,  6, ((ncclComm_t *, newcomm), (int, nranks), (int, myrank), (int, nId), (ncclUniqueId *, commIds), (ncclConfig_t *, config))) \
  X(ncclCommFinalize,                 21400, OPTIONAL, ACTION, RESULT,  1, ((ncclComm_t, comm))) \
  X(ncclCommDestroy,                  20300, REQUIRED, ACTION, RESULT,  1, ((ncclComm_t, comm))) \
  X(ncclCommAbort,                    20400, REQUIRED, ACTION, RESULT,  1, ((ncclComm_t, comm))) \
  X(ncclCommSplit,                    21801, OPTIONAL, ACTION, RESULT,  5, ((ncclComm_t, comm), (int, color), (int, key), (ncclComm_t *, newcomm), (ncclConfig_t *, config))) \
  X(ncclCommShrink,                   22703, OPTIONAL, ACTION, RESULT,  6, ((ncclComm_t, comm), (int *, excludeRanksList), (int, excludeRanksCount), (ncclComm_t *, newcomm), (ncclConfig_t *, config), (int, shrinkFlags))) \
  X(ncclCommRevoke,                   22807, OPTIONAL, ACTION, RESULT,  2, ((ncclComm_t, comm), (int, revokeFlags))) \
  X(ncclCommGetUniqueId,              22902, OPTIONAL, ACTION, RESULT,  2, ((ncclComm_t, comm), (ncclUniqueId *, uniqueId))) \
  X(ncclCommGrow,                     22902, OPTIONAL, ACTION, RESULT,  6, ((ncclComm_t, comm), (int, nRanks), (const ncclUniqueId *, uniqueId), (int, rank), (ncclComm_t *, newcomm), (ncclConfig_t *, config))) \
  X(ncclGetErrorString,               20300, REQUIRED, QUERY,  STRING,  1, ((ncclResult_t, result))) \
  X(ncclGetLastError,                 21300, OPTIONAL, QUERY,  STRING,  1, ((ncclComm_t, comm))) \
  X(ncclResetDebugInit,               22403, OPTIONAL, ACTION, VOID,    0, ()) \
  X(ncclCommGetAsyncError,            20400, REQUIRED, QUERY,  RESULT,  2, ((ncclComm_t, comm), (ncclResult_t *, asyncError))) \
  X(ncclCommCount,                    20300, OPTIONAL, QUERY,  RESULT,  2, ((const ncclComm_t, comm), (int *, count))) \
  X(ncclCommCuDevice,                 20300, OPTIONAL, QUERY,  RESULT,  2, ((const ncclComm_t, comm), (int *, device))) \
  X(ncclCommUserRank,                 20300, OPTIONAL, QUERY,  RESULT,  2, ((const ncclComm_t, comm), (int *, rank))) \
  X(ncclMemAlloc,                     21901, OPTIONAL, ACTION, RESULT,  2, ((void **, ptr), (size_t, size))) \
  X(ncclMemFree,                      21901, OPTIONAL, ACTION, RESULT,  1, ((void *, ptr))) \
  X(ncclCommRegister,                 21901, OPTIONAL, ACTION, RESULT,  4, ((const ncclComm_t, comm), (void *, buff), (size_t, size), (void **, handle))) \
  X(ncclCommDeregister,               21901, OPTIONAL, ACTION, RESULT,  2, ((const ncclComm_t, comm), (void *, handle))) \
  X(ncclCommWindowRegister,           22703, OPTIONAL, ACTION, RESULT,  5, ((ncclComm_t, comm), (void *, buff), (size_t, size), (ncclshim_window_t *, win), (int, winFlags))) \
  X(ncclCommWindowDeregister,         22703, OPTIONAL, ACTION, RESULT,  2, ((ncclComm_t, comm), (ncclshim_window_t, win))) \
  X(ncclWinGetUserPtr,                22902, OPTIONAL, QUERY,  RESULT,  3, ((ncclComm_t, comm), (ncclshim_window_t, win), (void **, outUserPtr))) \
  X(ncclCommSuspend,                  22907, OPTIONAL, ACTION, RESULT,  2, ((ncclComm_t, comm), (int, flags))) \
  X(ncclCommResume,                   22907, OPTIONAL, ACTION, RESULT,  1, ((ncclComm_t, comm))) \
  X(ncclCommMemStats,                 22907, OPTIONAL, QUERY,  RESULT,  3, ((ncclComm_t, comm), (int, stat), (uint64_t *, value))) \
  X(ncclRedOpCreatePreMulSum,         21100, OPTIONAL, ACTION, RESULT,  5, ((ncclRedOp_t *, op), (void *, scalar), (ncclDataType_t, datatype), (ncclScalarResidence_t, residence), (ncclComm_t, comm))) \
  X(ncclRedOpDestroy,                 21100, OPTIONAL, ACTION, RESULT,  2, ((ncclRedOp_t, op), (ncclComm_t, comm))) \
  X(ncclReduce,                       20300, REQUIRED, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclBcast,                        20300, REQUIRED, ACTION, RESULT,  6, ((void *, buff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclBroadcast,                    20300, REQUIRED, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAllReduce,                    20300, REQUIRED, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclReduceScatter,                20300, REQUIRED, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, recvcount), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAllGather,                    20300, REQUIRED, ACTION, RESULT,  6, ((const void *, sendbuff), (void *, recvbuff), (size_t, sendcount), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAlltoAll,                     22803, OPTIONAL, ACTION, RESULT,  6, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclGather,                       22803, OPTIONAL, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclScatter,                      22803, OPTIONAL, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclSend,                         20700, REQUIRED, ACTION, RESULT,  6, ((const void *, sendbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclRecv,                         20700, REQUIRED, ACTION, RESULT,  6, ((void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclPutSignal,                    22902, OPTIONAL, ACTION, RESULT, 11, ((const void *, localbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclshim_window_t, peerWin), (size_t, peerWinOffset), (int, sigIdx), (int, ctx), (unsigned int, flags), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclSignal,                       22902, OPTIONAL, ACTION, RESULT,  6, ((int, peer), (int, sigIdx), (int, ctx), (unsigned int, flags), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclWaitSignal,                   22902, OPTIONAL, ACTION, RESULT,  4, ((int, nDesc), (ncclshim_wait_signal_desc_t *, signalDescs), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclGroupStart,                   20300, REQUIRED, ACTION, RESULT,  0, ()) \
  X(ncclGroupEnd,                     20300, REQUIRED, ACTION, RESULT,  0, ()) \
  X(ncclGroupSimulateEnd,             22203, OPTIONAL, ACTION, RESULT,  1, ((ncclshim_sim_info_t *, simInfo))) \
  X(ncclParamBind,                    23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t *, out), (const char *, key))) \
  X(ncclParamGetI8,                   23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (int8_t *, out))) \
  X(ncclParamGetI16,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (int16_t *, out))) \
  X(ncclParamGetI32,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (int32_t *, out))) \
  X(ncclParamGetI64,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (int64_t *, out))) \
  X(ncclParamGetU8,                   23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (uint8_t *, out))) \
  X(ncclParamGetU16,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (uint16_t *, out))) \
  X(ncclParamGetU32,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (uint32_t *, out))) \
  X(ncclParamGetU64,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (uint64_t *, out))) \
  X(ncclParamGetStr,                  23003, OPTIONAL, QUERY,  RESULT,  2, ((ncclshim_param_handle_t, handle), (const char **, out))) \
  X(ncclParamGet,                     23003, OPTIONAL, QUERY,  RESULT,  4, ((ncclshim_param_handle_t, handle), (void *, out), (int, maxLen), (int *, len))) \
  X(ncclParamGetParameter,            23003, OPTIONAL, QUERY,  RESULT,  3, ((const char *, key), (const char **, value), (int *, valueLen))) \
  X(ncclParamGetAllParameterKeys,     23003, OPTIONAL, QUERY,  RESULT,  2, ((const char ***, table), (int *, len))) \
  X(ncclParamDumpAll,                 23003, OPTIONAL, ACTION, VOID,    0, ()) \
  X(ncclDevCommCreate,                22803, DEVICE,   ACTION, RESULT,  3, ((ncclComm_t, comm), (const ncclshim_dev_comm_requirements_t *, reqs), (ncclshim_dev_comm_t *, outDevComm))) \
  X(ncclDevCommDestroy,               22803, DEVICE,   ACTION, RESULT,  2, ((ncclComm_t, comm), (const ncclshim_dev_comm_t *, devComm))) \
  X(ncclTeamWorld,                    22803, DEVICE,   QUERY,  TEAM,    1, ((ncclComm_t, comm))) \
  X(ncclTeamLsa,                      22803, DEVICE,   QUERY,  TEAM,    1, ((ncclComm_t, comm))) \
  X(ncclTeamRail,                     22803, DEVICE,   QUERY,  TEAM,    1, ((ncclComm_t, comm))) \
  X(ncclTeamRankToWorld,              22803, DEVICE,   QUERY,  INT,     3, ((ncclComm_t, comm), (ncclshim_team_t, team), (int, rank))) \
  X(ncclTeamRankToLsa,                22803, DEVICE,   QUERY,  INT,     3, ((ncclComm_t, comm), (ncclshim_team_t, team), (int, rank))) \
  X(ncclLsaBarrierCreateRequirement,  22803, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_team_t, team), (int, nBarriers), (ncclshim_lsa_barrier_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq))) \
  X(ncclLLA2ACalcSlots,               22803, DEVICE,   QUERY,  INT,     2, ((int, maxElts), (int, maxEltSize))) \
  X(ncclLLA2ACreateRequirement,       22803, DEVICE,   QUERY,  RESULT,  4, ((int, nBlocks), (int, nSlots), (ncclshim_lla2a_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq))) \
  X(ncclGinBarrierCreateRequirement,  22807, DEVICE,   QUERY,  RESULT,  5, ((ncclComm_t, comm), (ncclshim_team_t, team), (int, nBarriers), (ncclshim_gin_barrier_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq))) \
  X(ncclCommQueryProperties,          22902, DEVICE,   QUERY,  RESULT,  2, ((ncclComm_t, comm), (ncclshim_comm_properties_t *, props))) \
  X(ncclGetLsaDevicePointer,          22902, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_window_t, window), (size_t, offset), (int, lsaRank), (void **, outPtr))) \
  X(ncclGetLsaMultimemDevicePointer,  22902, DEVICE,   QUERY,  RESULT,  3, ((ncclshim_window_t, window), (size_t, offset), (void **, outPtr))) \
  X(ncclGetMultimemDevicePointer,     22902, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_window_t, window), (size_t, offset), (ncclshim_multimem_handle_t, multimem), (void **, outPtr))) \
  X(ncclGetPeerDevicePointer,         22902, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_window_t, window), (size_t, offset), (int, peer), (void **, outPtr))) \
  X(ncclGinOutboxCreateRequirement,   22907, DEVICE,   QUERY,  RESULT,  4, ((int, nBlocks), (int, size_log2), (ncclshim_gin_outbox_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq))) \
  X(ncclGinInboxA2ACreateRequirement, 22907, DEVICE,   QUERY,  RESULT,  5, ((ncclshim_team_t, peers), (int, nBlocks), (int, size_log2), (ncclshim_gin_inbox_a2a_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq))) \
  X(ncclAllReduceConfig,              23203, OPTIONAL, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclBroadcastConfig,              23203, OPTIONAL, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclReduceConfig,                 23203, OPTIONAL, ACTION, RESULT,  9, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (int, root), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclAllGatherConfig,              23203, OPTIONAL, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, sendcount), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclReduceScatterConfig,          23203, OPTIONAL, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, recvcount), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclAlltoAllConfig,               23203, OPTIONAL, ACTION, RESULT,  7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclGatherConfig,                 23203, OPTIONAL, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclScatterConfig,                23203, OPTIONAL, ACTION, RESULT,  8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream), (const ncclshim_coll_config_t *, config))) \
  X(ncclSetEncryption,                23203, OPTIONAL, ACTION, RESULT,  1, ((const ncclshim_encryption_config_t *, config))) \
  X(ncclGetMultimemDeviceLeInfo,      23203, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_window_t, window), (size_t, offset), (ncclshim_cft_le_id_t *, leId), (size_t *, leOffset))) \
  X(ncclGetCftDeviceLeInfo,           23203, DEVICE,   QUERY,  RESULT,  6, ((ncclshim_window_t, window), (size_t, offset), (int, peerCft), (ncclshim_team_t, cftTeam), (ncclshim_cft_le_id_t *, leId), (size_t *, leOffset))) \
  X(ncclGetPeerDeviceLeInfo,          23203, DEVICE,   QUERY,  RESULT,  5, ((ncclshim_window_t, window), (size_t, offset), (int, peerWorld), (ncclshim_cft_le_id_t *, leId), (size_t *, leOffset))) \
  X(ncclTeamCft,                      23203, DEVICE,   QUERY,  TEAM,    2, ((ncclComm_t, comm), (int, mode))) \
  X(ncclTeamCftMultimem,              23203, DEVICE,   QUERY,  TEAM,    1, ((ncclComm_t, comm))) \
  X(ncclCftBarrierCreateRequirement,  23203, DEVICE,   QUERY,  RESULT,  4, ((ncclshim_team_t, team), (int, nBarriers), (ncclshim_cft_barrier_handle_t *, outHandle), (ncclshim_dev_resource_requirements_t *, outReq)))
/* clang-format on */

/* ---- The one dispatch on a row's return kind ----------------------------------------- */

/* The C type: NCCLSHIM_RETURNS(RESULT) is ncclResult_t. */
#define NCCLSHIM_RETURNS_RESULT ncclResult_t
#define NCCLSHIM_RETURNS_STRING const char *
#define NCCLSHIM_RETURNS_VOID void
#define NCCLSHIM_RETURNS_INT int
#define NCCLSHIM_RETURNS_TEAM ncclshim_team_t
#define NCCLSHIM_RETURNS(kind) NCCLSHIM_RETURNS_##kind

/* `return` before a call whose value is passed on: every kind but VOID. */
#define NCCLSHIM_NCCL_KIND_VOID ~,
#define NCCLSHIM_NCCL_RETURN_IF_VALUE(kind) NCCLSHIM_PP_SELECT(NCCLSHIM_NCCL_KIND_##kind, return )

/* The statement an "unavailable" entry ends with (the answers described at the top): RESULT
 * returns `result`, STRING returns `text`, VOID nothing, INT -1, TEAM the empty team. */
#define NCCLSHIM_NCCL_UNAVAILABLE(kind, result, text) NCCLSHIM_NCCL_UNAVAILABLE_##kind(result, text)
#define NCCLSHIM_NCCL_UNAVAILABLE_RESULT(result, text) return result;
#define NCCLSHIM_NCCL_UNAVAILABLE_STRING(result, text) return text;
#define NCCLSHIM_NCCL_UNAVAILABLE_VOID(result, text)
#define NCCLSHIM_NCCL_UNAVAILABLE_INT(result, text) return -1;
#define NCCLSHIM_NCCL_UNAVAILABLE_TEAM(result, text) \
  return (ncclshim_team_t){.nRanks = 0, .rank = -1, .stride = 0};

/* ---- The role column ----------------------------------------------------------------- */

/* A row's role as a number: NCCLSHIM_NCCL_IS_QUERY(QUERY) is 1, NCCLSHIM_NCCL_IS_QUERY(ACTION)
 * is 0, and any other word fails to compile (an undeclared NCCLSHIM_NCCL_ROLE_ identifier). */
#define NCCLSHIM_NCCL_ROLE_QUERY 1
#define NCCLSHIM_NCCL_ROLE_ACTION 0
#define NCCLSHIM_NCCL_IS_QUERY(role) NCCLSHIM_NCCL_ROLE_##role

/* The function-pointer type of one row: NCCLSHIM_NCCL_PFN(ncclAllReduce). */
#define NCCLSHIM_NCCL_PFN(name) ncclshim_pfn_##name
#define NCCLSHIM_NCCL_DECLARE_PFN_(name, version, policy, role, returns, n, params) \
  typedef NCCLSHIM_RETURNS(returns)(*ncclshim_pfn_##name) NCCLSHIM_PP_PARAMS(n, params);
NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_DECLARE_PFN_)

/* One index per function: NCCLSHIM_FN_ncclAllReduce. */
#define NCCLSHIM_NCCL_ENUM_(name, version, policy, role, returns, n, params) NCCLSHIM_FN_##name,
enum ncclshim_nccl_function {
  NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_ENUM_) NCCLSHIM_NCCL_FUNCTION_COUNT
};

/* A row's prototypes, public and pncclX profiling names. */
#define NCCLSHIM_NCCL_PROTOTYPE_(name, version, policy, role, returns, n, params) \
  NCCLSHIM_RETURNS(returns) name NCCLSHIM_PP_PARAMS(n, params);                   \
  NCCLSHIM_RETURNS(returns) p##name NCCLSHIM_PP_PARAMS(n, params);
/* The same for the rows nccl.h declares; nothing for nccl_device.h's (DEVICE), whose real
 * declarations use NCCL's own struct types and would clash with ncclshim's. */
#define NCCLSHIM_NCCL_H_PROTOTYPE_REQUIRED NCCLSHIM_NCCL_PROTOTYPE_
#define NCCLSHIM_NCCL_H_PROTOTYPE_OPTIONAL NCCLSHIM_NCCL_PROTOTYPE_
#define NCCLSHIM_NCCL_H_PROTOTYPE_DEVICE(...)
#define NCCLSHIM_NCCL_H_PROTOTYPE_(name, version, policy, role, returns, n, params) \
  NCCLSHIM_NCCL_H_PROTOTYPE_##policy(name, version, policy, role, returns, n, params)

#ifdef NCCLSHIM_PROVIDES_NCCL_H
/* Standing in for nccl.h: the same prototypes. */
#ifdef __cplusplus
extern "C" {
#endif
NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_H_PROTOTYPE_)
#ifdef __cplusplus
}
#endif
#endif

/* The device API's host functions by NCCL's names, with ncclshim's types: for code that calls
 * them through the drop-in without nccl_device.h. Define NCCLSHIM_DECLARE_DEVICE_API before
 * the first include; never together with nccl_device.h, whose types differ in spelling. */
#ifdef NCCLSHIM_DECLARE_DEVICE_API
#define NCCLSHIM_NCCL_DEVICE_PROTOTYPE_REQUIRED(...)
#define NCCLSHIM_NCCL_DEVICE_PROTOTYPE_OPTIONAL(...)
#define NCCLSHIM_NCCL_DEVICE_PROTOTYPE_DEVICE NCCLSHIM_NCCL_PROTOTYPE_
#define NCCLSHIM_NCCL_DEVICE_PROTOTYPE_(name, version, policy, role, returns, n, params) \
  NCCLSHIM_NCCL_DEVICE_PROTOTYPE_##policy(name, version, policy, role, returns, n, params)
#ifdef __cplusplus
extern "C" {
#endif
NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_DEVICE_PROTOTYPE_)
#ifdef __cplusplus
}
#endif
#endif

#endif /* NCCLSHIM_NCCL_FUNCTIONS_H */
