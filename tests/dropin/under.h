/* The NCCL under the drop-in (under_generic.c, under_nccl.c), as its test program sees it. */
#ifndef NCCLSHIM_TEST_UNDER_H
#define NCCLSHIM_TEST_UNDER_H

#include "ncclshim/nccl_functions.h"

#define UNDER_EXPORT __attribute__((visibility("default")))

/* Calls that reached this library, by function name (-1: no such name). */
int under_calls(const char *function);
/* The next call of `function` returns `result`. */
void under_fail(const char *function, int result);
/* What ncclCommGetAsyncError reports from now on. */
void under_set_async(int result);

ncclResult_t under_answer(int fn);

#endif
