/* The rest of a benchmark's libnccl.so.2: include it last, after defining WRITTEN_<name> as
 * "~, 1," for each function the file writes itself. Every other row of ncclshim's list is
 * exported doing nothing and succeeding (an empty string, 0, an empty team). */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DONE_RESULT return ncclSuccess;
#define DONE_STRING return "";
#define DONE_VOID
#define DONE_INT return 0;
#define DONE_TEAM return (ncclshim_team_t){0, 0, 0};
#define NOOP_(name, version, policy, role, returns, n, params) \
  EXPORT NCCLSHIM_RETURNS(returns)                             \
  name NCCLSHIM_PP_PARAMS(n, params) { DONE_##returns }
#define GENERATE_0(...) NOOP_(__VA_ARGS__)
#define GENERATE_1(...)
#define GENERATE_(name, ...) \
  NCCLSHIM_PP_CAT(GENERATE_, NCCLSHIM_PP_SELECT(WRITTEN_##name, 0))(name, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(GENERATE_)
