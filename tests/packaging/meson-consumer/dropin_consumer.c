/* An NCCL program linked with the drop-in (ncclshim-nccl) instead of -lnccl. Usage:
 * dropin_consumer EXPECTED_NCCL_VERSION; prints "NCCL <code> through the drop-in". */
#include <stdio.h>
#include <stdlib.h>

#include <ncclshim/ncclshim.h> /* stands in for nccl.h; the real one works the same */

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dropin_consumer EXPECTED_NCCL_VERSION\n");
    return 2;
  }
  int code = 0;
  ncclResult_t result = ncclGetVersion(&code);
  if (result != ncclSuccess || code != atoi(argv[1])) {
    fprintf(stderr, "ncclGetVersion: %s (%d), code %d\n", ncclGetErrorString(result), result, code);
    return 1;
  }
  printf("NCCL %d through the drop-in\n", code);
  return 0;
}
