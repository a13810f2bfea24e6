/* Facts about the rows of the CUDA function list. */
#include "cuda_handle.h"

#define SUFFIX_BASE ""
#define SUFFIX_V2 "_v2"
#define IS_REQUIRED 1
#define IS_OPTIONAL 0

#define NAME_(name, ask, policy, abi, n, params) #name,
#define ASK_(name, ask, policy, abi, n, params) ask,
#define REQUIRED_(name, ask, policy, abi, n, params) IS_##policy,
#define SUFFIX_(name, ask, policy, abi, n, params) SUFFIX_##abi,
static const char *const function_names[] = {NCCLSHIM_CUDA_FUNCTIONS(NAME_)};
static const int function_asks[] = {NCCLSHIM_CUDA_FUNCTIONS(ASK_)};
static const unsigned char function_required[] = {NCCLSHIM_CUDA_FUNCTIONS(REQUIRED_)};
static const char *const function_suffixes[] = {NCCLSHIM_CUDA_FUNCTIONS(SUFFIX_)};

typedef struct older_abi {
  enum ncclshim_cuda_function fn;
  int ask;
  const char *suffix;
} older_abi;
#define OLDER_(name, ask, abi) {NCCLSHIM_CUDA_FN_##name, ask, SUFFIX_##abi},
static const older_abi older_abis[] = {NCCLSHIM_CUDA_OLDER_ABIS(OLDER_)};

#define VALID(fn) ((unsigned)(fn) < NCCLSHIM_CUDA_FUNCTION_COUNT)

const char *ncclshim_cuda_function_name(enum ncclshim_cuda_function fn) {
  return VALID(fn) ? function_names[fn] : "(unknown function)";
}

int ncclshim_cuda_function_version(enum ncclshim_cuda_function fn) {
  return VALID(fn) ? function_asks[fn] : 0;
}

int ncclshim_cuda_function_required(enum ncclshim_cuda_function fn) {
  return VALID(fn) ? function_required[fn] : 0;
}

const char *ncs_cuda_export_suffix(enum ncclshim_cuda_function fn) {
  return VALID(fn) ? function_suffixes[fn] : "";
}

int ncs_cuda_older_abi(enum ncclshim_cuda_function fn, const char **suffix) {
  for (size_t i = 0; i < sizeof(older_abis) / sizeof(older_abis[0]); i++) {
    if (older_abis[i].fn == fn) {
      *suffix = older_abis[i].suffix;
      return older_abis[i].ask;
    }
  }
  return 0;
}
