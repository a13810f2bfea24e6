/* A program written against NCCL's plain names and linked with the drop-in only. Prints what
 * it got as key=value lines for the drop-in tests. */
#include <stdio.h>

#include "ncclshim/ncclshim.h" /* stands in for nccl.h here; a real nccl.h works the same */

int main(void) {
  int version = -1;
  ncclResult_t result = ncclGetVersion(&version);
  printf("version_result=%d\nversion=%d\n", result, version);
  result = ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, NULL, NULL);
  printf("allreduce_result=%d\n", result);
  printf("last_error=%s\n", ncclGetLastError(NULL));
  printf("error_string=%s\n", ncclGetErrorString(result));
  printf("profiling_result=%d\n", pncclGroupStart());
  return 0;
}
