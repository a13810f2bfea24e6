/* What the interposed program's files share (interposed.c, interposed_cuda.c). */
#ifndef NCCLSHIM_TEST_INTERPOSED_H
#define NCCLSHIM_TEST_INTERPOSED_H

#include "ncclshim/nccl_functions.h"

/* Rank `rank` of a 2-rank communicator made from the test's unique id. */
ncclComm_t interposed_start(int rank);
/* The scenarios with a fake CUDA driver: 0 when `what` is one, 1 otherwise. */
int cuda_scenario(const char *what);

#endif
