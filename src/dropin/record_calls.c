/* The recording wrappers, one per row of the NCCL function list: each notes the arguments
 * whose role the recorder knows by their name in the list (comm, count, datatype, op, root,
 * peer, stream, ...), brackets the real call with ncs_rec_begin / ncs_rec_end, and
 * returns what the real call returned. A new row needs nothing here; a new return kind of
 * the list needs one REC_FINISH_ line; a new parameter name with a role one REC_ROLE_ line.
 * Queries (rows whose role column is QUERY) are kept only when they fail. */
#include <stddef.h>

#include "record.h"

/* ---- Parameter roles, by the parameter's name in the list ---- */
#define REC_ROLE_comm ~, COMM
#define REC_ROLE_newcomm ~, NEWCOMM
#define REC_ROLE_commId ~, UID
#define REC_ROLE_commIds ~, UID
#define REC_ROLE_uniqueId ~, UID
#define REC_ROLE_nranks ~, NRANKS
#define REC_ROLE_nRanks ~, NRANKS
#define REC_ROLE_rank ~, RANK
#define REC_ROLE_myrank ~, RANK
#define REC_ROLE_color ~, COLOR
#define REC_ROLE_count ~, COUNT
#define REC_ROLE_sendcount ~, COUNT
#define REC_ROLE_recvcount ~, COUNT
#define REC_ROLE_datatype ~, DATATYPE
#define REC_ROLE_op ~, OP
#define REC_ROLE_root ~, ROOT
#define REC_ROLE_peer ~, PEER
#define REC_ROLE_stream ~, STREAM
#define REC_ROLE_asyncError ~, ASYNC
#define REC_ROLE_config ~, CONFIG
#define REC_ROLE_simInfo ~, SIMINFO
#define REC_NOTE(type, name) \
  NCCLSHIM_PP_CAT(REC_NOTE_, NCCLSHIM_PP_SELECT(REC_ROLE_##name, NONE))(name)

/* Each role takes the value only when it has the type expected (ncclCommCount's `count` is
 * an int *, not a count); otherwise the field keeps "no value". */
#define REC_NOTE_NONE(name) (void)name;
/* `comm` is the communicator acted on, or (ncclCommInitRank: ncclComm_t *) the new one. */
#define REC_NOTE_COMM(name)                                                                     \
  rec_.comm = _Generic((name), ncclComm_t * : (const void *)0, default : (const void *)(name)); \
  rec_.comm_out = _Generic((name), ncclComm_t * : (name), default : (ncclComm_t *)0);
#define REC_NOTE_NEWCOMM(name) rec_.comm_out = _Generic((name), ncclComm_t * : (name), default : 0);
/* By value (ncclCommInitRank) or by address (ncclCommInitRankScalable, ncclCommGrow); read at
 * the end, and only from a call that made a communicator. */
#define REC_NOTE_UID(name) \
  rec_.uid = rec_uid(_Generic((name), ncclUniqueId : 1, default : 0), &(name));
#define REC_INT(name) _Generic((name), int : (name), default : NCCLSHIM_REC_NONE)
#define REC_NOTE_NRANKS(name) rec_.nranks = REC_INT(name);
#define REC_NOTE_RANK(name) rec_.rank = REC_INT(name);
#define REC_NOTE_COLOR(name) rec_.color = REC_INT(name);
#define REC_NOTE_ROOT(name) rec_.root = REC_INT(name);
#define REC_NOTE_PEER(name) rec_.peer = REC_INT(name);
#define REC_NOTE_COUNT(name)                                           \
  rec_.count = _Generic((name), size_t : (name), default : (size_t)0); \
  rec_.has_count = _Generic((name), size_t : 1, default : 0);
#define REC_NOTE_DATATYPE(name) \
  rec_.datatype = _Generic((name), ncclDataType_t : (name), default : NCCLSHIM_REC_NONE);
/* ncclRedOpCreatePreMulSum's `op` is the ncclRedOp_t * it fills: no op yet. */
#define REC_NOTE_OP(name) \
  rec_.op = _Generic((name), ncclRedOp_t : (name), default : NCCLSHIM_REC_NONE);
#define REC_NOTE_STREAM(name)         \
  rec_.stream = (const void *)(name); \
  rec_.is_op = 1;
/* Only the ...Config collectives' ncclCollConfig_t: ncclCommInitRankConfig's is an ncclConfig_t.
 * Read once NCCL accepted the call (record_ring.c), never before. */
#define REC_NOTE_CONFIG(name) \
  rec_.coll_config = _Generic((name), const ncclshim_coll_config_t * : (name), default : NULL);
/* ncclGroupSimulateEnd(NULL) launches the group as ncclGroupEnd does; given a simInfo, NCCL
 * only estimates its time. */
#define REC_NOTE_SIMINFO(name) \
  rec_.simulated = _Generic((name), ncclshim_sim_info_t * : (name) != NULL, default : 0);
#define REC_NOTE_ASYNC(name) \
  rec_.async_out = _Generic((name), ncclResult_t * : (name), default : (ncclResult_t *)0);

static const void *rec_uid(int by_value, const void *address) {
  return by_value ? address : *(const void *const *)address;
}

/* ---- Return kinds, one line each: RESULT is recorded as a result code, VOID returns nothing,
 * every other kind is passed through. */
#define REC_FINISH(returns, call) REC_FINISH_##returns(returns, call)
#define REC_FINISH_STRING REC_FINISH_VALUE
#define REC_FINISH_INT REC_FINISH_VALUE
#define REC_FINISH_TEAM REC_FINISH_VALUE
#define REC_FINISH_RESULT(returns, call) \
  ncclResult_t rec_result_ = call;       \
  ask_rank(&rec_, rec_result_);          \
  ncs_rec_end(&rec_, (int)rec_result_);  \
  return rec_result_;
#define REC_FINISH_VALUE(returns, call)        \
  NCCLSHIM_RETURNS(returns) rec_value_ = call; \
  ncs_rec_end(&rec_, NCCLSHIM_REC_NO_RESULT);  \
  return rec_value_;
#define REC_FINISH_VOID(returns, call) \
  call;                                \
  ncs_rec_end(&rec_, NCCLSHIM_REC_NO_RESULT);

/* The table the wrappers call; set once, before the recording table is handed out. */
static const ncclshim_nccl_table *real_;

/* A split's rank and size follow from every rank's key: asked of NCCL (ncclCommUserRank,
 * ncclCommCount) once it is made, before ncs_rec_end records the communicator; left
 * "no value" when NCCL does not answer. A call given a unique id says them itself. */
static void ask_rank(ncs_rec_call *call, ncclResult_t result) {
  if (call->comm_out == NULL || call->uid != NULL || call->skip ||
      (result != ncclSuccess && result != ncclInProgress) || *call->comm_out == NULL)
    return;
  ncclComm_t made = *call->comm_out;
  if (real_->ncclCommUserRank == NULL || real_->ncclCommCount == NULL ||
      real_->ncclCommUserRank(made, &call->rank) != ncclSuccess ||
      real_->ncclCommCount(made, &call->nranks) != ncclSuccess)
    call->rank = call->nranks = NCCLSHIM_REC_NONE;
}

/* Names here must not collide with any parameter name of the list. */
#define REC_WRAPPER_(name, version, policy, role, returns, n, params)            \
  static NCCLSHIM_RETURNS(returns) record_##name NCCLSHIM_PP_PARAMS(n, params) { \
    ncs_rec_call rec_ = {                                                        \
        .fn = NCCLSHIM_FN_##name,                                                \
        .is_query = NCCLSHIM_NCCL_IS_QUERY(role),                                \
        .datatype = NCCLSHIM_REC_NONE,                                           \
        .op = NCCLSHIM_REC_NONE,                                                 \
        .root = NCCLSHIM_REC_NONE,                                               \
        .peer = NCCLSHIM_REC_NONE,                                               \
        .rank = NCCLSHIM_REC_NONE,                                               \
        .nranks = NCCLSHIM_REC_NONE,                                             \
        .color = NCCLSHIM_REC_NONE,                                              \
    };                                                                           \
    NCCLSHIM_PP_EACH(n, REC_NOTE, params)                                        \
    ncs_rec_begin(&rec_);                                                        \
    REC_FINISH(returns, real_->name NCCLSHIM_PP_ARGS(n, params))                 \
  }
NCCLSHIM_NCCL_FUNCTIONS(REC_WRAPPER_)

#define REC_ENTRY_(name, version, policy, role, returns, n, params) .name = record_##name,
static const ncclshim_nccl_table recording = {NCCLSHIM_NCCL_FUNCTIONS(REC_ENTRY_)};

const ncclshim_nccl_table *ncs_rec_table(const ncclshim_nccl_table *real) {
  real_ = real;
  return &recording;
}
