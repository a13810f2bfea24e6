/* What the fake libnccl records, read by the tests through dlsym on the fake's handle. */
#ifndef NCCLSHIM_FAKE_NCCL_H
#define NCCLSHIM_FAKE_NCCL_H

#include <stddef.h>

enum { FAKE_MAX_ARGS = 12, FAKE_MAX_ARG_BYTES = 128 };

typedef struct fake_nccl_call {
  char function[64]; /* the fake entry point that ran */
  int nargs;
  size_t size[FAKE_MAX_ARGS]; /* sizeof each argument as the fake received it */
  unsigned char bytes[FAKE_MAX_ARGS][FAKE_MAX_ARG_BYTES]; /* and its bytes */
  int version_code;                                       /* which fake answered */
} fake_nccl_call;

/* Exported by every fake (resolve with dlsym): */
typedef const fake_nccl_call *(*fake_nccl_last_call_fn)(void);
typedef void (*fake_nccl_set_result_fn)(int result); /* what RESULT functions return next */
typedef int (*fake_nccl_count_fn)(void);             /* ncclGetVersion calls, or all calls */

#endif
