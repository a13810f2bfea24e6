/* abi_real.c again, compiled as C++17: the real nccl.h first, then ncclshim's header. */
#define ABI_CHECK_VALUES abi_check_values_cxx
#define ABI_LANGUAGE "C++17"
#include "abi_real.c"
