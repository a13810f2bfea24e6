/* The rest of a small fake libcuda: include it last, after defining WRITTEN_<name> as "~, 1,"
 * for each driver function the file writes itself (and for those it leaves out on purpose).
 * Every other row of the list is exported under both its names (name and name_v2) and
 * answers CUDA_SUCCESS. */
#define IS_WRITTEN(name) NCCLSHIM_PP_SELECT(WRITTEN_##name, 0)
#define GENERATE_0(name, ask, policy, abi, n, params)                        \
  EXPORT ncclshim_cu_result name NCCLSHIM_PP_PARAMS(n, params) { return 0; } \
  EXPORT ncclshim_cu_result name##_v2 NCCLSHIM_PP_PARAMS(n, params) __attribute__((alias(#name)));
#define GENERATE_1(...)
#define GENERATE_(name, ...) NCCLSHIM_PP_CAT(GENERATE_, IS_WRITTEN(name))(name, __VA_ARGS__)
NCCLSHIM_CUDA_FUNCTIONS(GENERATE_)
