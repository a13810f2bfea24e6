/* Prints the C layout of ncclshim_nccl_entry, which the package's _native.Entry mirrors for
 * loaded(): "ncclshim_nccl_entry SIZE" and "ncclshim_nccl_entry.FIELD OFFSET" lines, in
 * struct_layout's format, for test_api.py. */
#include <stddef.h>
#include <stdio.h>

#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

#define FIELD(field) \
  printf("ncclshim_nccl_entry.%s %zu\n", #field, offsetof(ncclshim_nccl_entry, field));

int main(void) {
  printf("ncclshim_nccl_entry %zu\n", sizeof(ncclshim_nccl_entry));
  FIELD(path)
  FIELD(version)
  FIELD(how)
  FIELD(mapped)
  FIELD(in_program)
  FIELD(chosen)
  return 0;
}
