/* The one list of NCCL host functions (nccl.h, 2.18 -> 2.30.7). Everything else is generated
 * from it: the table's fields, the name strings, loading, the "unavailable" stubs and the
 * drop-in library's exports. Adding a function is one line.
 *
 * X(name, first_version, policy, returns, nparams, ((type, name), ...))
 *   first_version  the release that first exported it, as MAJOR*10000 + MINOR*100 + PATCH
 *                  (20300 = "already in 2.3", the oldest release anyone still meets)
 *   policy         REQUIRED: a table without it is refused (MISSING_SYMBOLS);
 *                  OPTIONAL: missing means that function (and its capability) is unavailable
 *   returns        RESULT (ncclResult_t), STRING (const char *) or VOID
 *
 * The device-API host functions of nccl_device.h (ncclDevCommCreate, ncclTeam*, ...) are left
 * out on purpose: NCCL gives them no ABI promise between releases. */
#ifndef NCCLSHIM_NCCL_FUNCTIONS_H
#define NCCLSHIM_NCCL_FUNCTIONS_H

#include "ncclshim/nccl_abi.h"
#include "ncclshim/pp.h"

/* clang-format off */
#define NCCLSHIM_NCCL_FUNCTIONS(X) \
  X(ncclGetVersion,            20300, REQUIRED, RESULT, 1, ((int *, version))) \
  X(ncclGetUniqueId,           20300, REQUIRED, RESULT, 1, ((ncclUniqueId *, uniqueId))) \
  X(ncclCommInitRank,          20300, REQUIRED, RESULT, 4, ((ncclComm_t *, comm), (int, nranks), (ncclUniqueId, commId), (int, rank))) \
  X(ncclCommInitAll,           20300, OPTIONAL, RESULT, 3, ((ncclComm_t *, comms), (int, ndev), (const int *, devlist))) \
  X(ncclCommInitRankConfig,    21400, OPTIONAL, RESULT, 5, ((ncclComm_t *, comm), (int, nranks), (ncclUniqueId, commId), (int, rank), (ncclConfig_t *, config))) \
  X(ncclCommInitRankScalable,  22304, OPTIONAL, RESULT, 6, ((ncclComm_t *, newcomm), (int, nranks), (int, myrank), (int, nId), (ncclUniqueId *, commIds), (ncclConfig_t *, config))) \
  X(ncclCommFinalize,          21400, OPTIONAL, RESULT, 1, ((ncclComm_t, comm))) \
  X(ncclCommDestroy,           20300, REQUIRED, RESULT, 1, ((ncclComm_t, comm))) \
  X(ncclCommAbort,             20400, REQUIRED, RESULT, 1, ((ncclComm_t, comm))) \
  X(ncclCommSplit,             21801, OPTIONAL, RESULT, 5, ((ncclComm_t, comm), (int, color), (int, key), (ncclComm_t *, newcomm), (ncclConfig_t *, config))) \
  X(ncclCommShrink,            22703, OPTIONAL, RESULT, 6, ((ncclComm_t, comm), (int *, excludeRanksList), (int, excludeRanksCount), (ncclComm_t *, newcomm), (ncclConfig_t *, config), (int, shrinkFlags))) \
  X(ncclCommRevoke,            22807, OPTIONAL, RESULT, 2, ((ncclComm_t, comm), (int, revokeFlags))) \
  X(ncclCommGetUniqueId,       22902, OPTIONAL, RESULT, 2, ((ncclComm_t, comm), (ncclUniqueId *, uniqueId))) \
  X(ncclCommGrow,              22902, OPTIONAL, RESULT, 6, ((ncclComm_t, comm), (int, nRanks), (const ncclUniqueId *, uniqueId), (int, rank), (ncclComm_t *, newcomm), (ncclConfig_t *, config))) \
  X(ncclGetErrorString,        20300, REQUIRED, STRING, 1, ((ncclResult_t, result))) \
  X(ncclGetLastError,          21300, OPTIONAL, STRING, 1, ((ncclComm_t, comm))) \
  X(ncclResetDebugInit,        22403, OPTIONAL, VOID,   0, ()) \
  X(ncclCommGetAsyncError,     20400, REQUIRED, RESULT, 2, ((ncclComm_t, comm), (ncclResult_t *, asyncError))) \
  X(ncclCommCount,             20300, OPTIONAL, RESULT, 2, ((const ncclComm_t, comm), (int *, count))) \
  X(ncclCommCuDevice,          20300, OPTIONAL, RESULT, 2, ((const ncclComm_t, comm), (int *, device))) \
  X(ncclCommUserRank,          20300, OPTIONAL, RESULT, 2, ((const ncclComm_t, comm), (int *, rank))) \
  X(ncclMemAlloc,              21901, OPTIONAL, RESULT, 2, ((void **, ptr), (size_t, size))) \
  X(ncclMemFree,               21901, OPTIONAL, RESULT, 1, ((void *, ptr))) \
  X(ncclCommRegister,          21901, OPTIONAL, RESULT, 4, ((const ncclComm_t, comm), (void *, buff), (size_t, size), (void **, handle))) \
  X(ncclCommDeregister,        21901, OPTIONAL, RESULT, 2, ((const ncclComm_t, comm), (void *, handle))) \
  X(ncclCommWindowRegister,    22703, OPTIONAL, RESULT, 5, ((ncclComm_t, comm), (void *, buff), (size_t, size), (ncclshim_window_t *, win), (int, winFlags))) \
  X(ncclCommWindowDeregister,  22703, OPTIONAL, RESULT, 2, ((ncclComm_t, comm), (ncclshim_window_t, win))) \
  X(ncclWinGetUserPtr,         22902, OPTIONAL, RESULT, 3, ((ncclComm_t, comm), (ncclshim_window_t, win), (void **, outUserPtr))) \
  X(ncclCommSuspend,           22907, OPTIONAL, RESULT, 2, ((ncclComm_t, comm), (int, flags))) \
  X(ncclCommResume,            22907, OPTIONAL, RESULT, 1, ((ncclComm_t, comm))) \
  X(ncclCommMemStats,          22907, OPTIONAL, RESULT, 3, ((ncclComm_t, comm), (int, stat), (uint64_t *, value))) \
  X(ncclRedOpCreatePreMulSum,  21100, OPTIONAL, RESULT, 5, ((ncclRedOp_t *, op), (void *, scalar), (ncclDataType_t, datatype), (ncclScalarResidence_t, residence), (ncclComm_t, comm))) \
  X(ncclRedOpDestroy,          21100, OPTIONAL, RESULT, 2, ((ncclRedOp_t, op), (ncclComm_t, comm))) \
  X(ncclReduce,                20300, REQUIRED, RESULT, 8, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclBcast,                 20300, REQUIRED, RESULT, 6, ((void *, buff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclBroadcast,             20300, REQUIRED, RESULT, 7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAllReduce,             20300, REQUIRED, RESULT, 7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclReduceScatter,         20300, REQUIRED, RESULT, 7, ((const void *, sendbuff), (void *, recvbuff), (size_t, recvcount), (ncclDataType_t, datatype), (ncclRedOp_t, op), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAllGather,             20300, REQUIRED, RESULT, 6, ((const void *, sendbuff), (void *, recvbuff), (size_t, sendcount), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclAlltoAll,              22803, OPTIONAL, RESULT, 6, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclGather,                22803, OPTIONAL, RESULT, 7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclScatter,               22803, OPTIONAL, RESULT, 7, ((const void *, sendbuff), (void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, root), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclSend,                  20700, REQUIRED, RESULT, 6, ((const void *, sendbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclRecv,                  20700, REQUIRED, RESULT, 6, ((void *, recvbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclPutSignal,             22902, OPTIONAL, RESULT, 11, ((const void *, localbuff), (size_t, count), (ncclDataType_t, datatype), (int, peer), (ncclshim_window_t, peerWin), (size_t, peerWinOffset), (int, sigIdx), (int, ctx), (unsigned int, flags), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclSignal,                22902, OPTIONAL, RESULT, 6, ((int, peer), (int, sigIdx), (int, ctx), (unsigned int, flags), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclWaitSignal,            22902, OPTIONAL, RESULT, 4, ((int, nDesc), (ncclshim_wait_signal_desc_t *, signalDescs), (ncclComm_t, comm), (cudaStream_t, stream))) \
  X(ncclGroupStart,            20300, REQUIRED, RESULT, 0, ()) \
  X(ncclGroupEnd,              20300, REQUIRED, RESULT, 0, ()) \
  X(ncclGroupSimulateEnd,      22203, OPTIONAL, RESULT, 1, ((ncclshim_sim_info_t *, simInfo))) \
  X(ncclParamBind,             23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t *, out), (const char *, key))) \
  X(ncclParamGetI8,            23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (int8_t *, out))) \
  X(ncclParamGetI16,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (int16_t *, out))) \
  X(ncclParamGetI32,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (int32_t *, out))) \
  X(ncclParamGetI64,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (int64_t *, out))) \
  X(ncclParamGetU8,            23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (uint8_t *, out))) \
  X(ncclParamGetU16,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (uint16_t *, out))) \
  X(ncclParamGetU32,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (uint32_t *, out))) \
  X(ncclParamGetU64,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (uint64_t *, out))) \
  X(ncclParamGetStr,           23003, OPTIONAL, RESULT, 2, ((ncclshim_param_handle_t, handle), (const char **, out))) \
  X(ncclParamGet,              23003, OPTIONAL, RESULT, 4, ((ncclshim_param_handle_t, handle), (void *, out), (int, maxLen), (int *, len))) \
  X(ncclParamGetParameter,     23003, OPTIONAL, RESULT, 3, ((const char *, key), (const char **, value), (int *, valueLen))) \
  X(ncclParamGetAllParameterKeys, 23003, OPTIONAL, RESULT, 2, ((const char ***, table), (int *, len))) \
  X(ncclParamDumpAll,          23003, OPTIONAL, VOID,   0, ())
/* clang-format on */

/* Return types of the three kinds. */
#define NCCLSHIM_RETURNS_RESULT ncclResult_t
#define NCCLSHIM_RETURNS_STRING const char *
#define NCCLSHIM_RETURNS_VOID void
#define NCCLSHIM_RETURNS(kind) NCCLSHIM_RETURNS_##kind

/* The function-pointer type of one row: NCCLSHIM_NCCL_PFN(ncclAllReduce). */
#define NCCLSHIM_NCCL_PFN(name) ncclshim_pfn_##name
#define NCCLSHIM_NCCL_DECLARE_PFN_(name, version, policy, returns, n, params) \
  typedef NCCLSHIM_RETURNS(returns)(*ncclshim_pfn_##name) NCCLSHIM_PP_PARAMS(n, params);
NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_DECLARE_PFN_)

/* One index per function: NCCLSHIM_FN_ncclAllReduce. */
#define NCCLSHIM_NCCL_ENUM_(name, version, policy, returns, n, params) NCCLSHIM_FN_##name,
enum ncclshim_nccl_function {
  NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_ENUM_) NCCLSHIM_NCCL_FUNCTION_COUNT
};

/* A row's prototypes, public and pncclX profiling names. */
#define NCCLSHIM_NCCL_PROTOTYPE_(name, version, policy, returns, n, params) \
  NCCLSHIM_RETURNS(returns) name NCCLSHIM_PP_PARAMS(n, params);             \
  NCCLSHIM_RETURNS(returns) p##name NCCLSHIM_PP_PARAMS(n, params);

#ifdef NCCLSHIM_PROVIDES_NCCL_H
/* Standing in for nccl.h: the same prototypes. */
#ifdef __cplusplus
extern "C" {
#endif
NCCLSHIM_NCCL_FUNCTIONS(NCCLSHIM_NCCL_PROTOTYPE_)
#ifdef __cplusplus
}
#endif
#endif

#endif /* NCCLSHIM_NCCL_FUNCTIONS_H */
