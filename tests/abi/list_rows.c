/* Prints ncclshim's NCCL function list, one "NAME FIRST_VERSION POLICY" line per row, for
 * tests/abi/corpus.py, which compares it with what each release's headers declare. */
#include <stdio.h>

#include "ncclshim/nccl_functions.h"

#define ROW_(name, version, policy, role, returns, n, params) \
  printf("%s %d %s\n", #name, version, #policy);

int main(void) {
  NCCLSHIM_NCCL_FUNCTIONS(ROW_)
  return 0;
}
