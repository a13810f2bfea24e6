/* ncclshim-probe: what NCCL was found, and what it can do. */
#include <stdio.h>

#include "ncclshim/ncclshim.h"

int main(void) {
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  char version[16], need[16], why[256];
  printf("ncclshim: %s\n", ncclshim_nccl_message(nccl));
  printf("version: %s\n",
         ncclshim_format_version(ncclshim_nccl_version(nccl), version, sizeof(version)));
  for (int c = 0; c < NCCLSHIM_CAPABILITY_COUNT; c++) {
    printf("  %-22s %-4s (NCCL >= %s)%s%s\n", ncclshim_capability_name(c),
           ncclshim_nccl_has(nccl, c) ? "yes" : "no",
           ncclshim_format_version(ncclshim_capability_version(c), need, sizeof(need)),
           ncclshim_nccl_has(nccl, c) ? "" : ": ",
           ncclshim_nccl_capability_reason(nccl, c, why, sizeof(why)));
  }
  for (size_t i = 0; i < ncclshim_nccl_attempt_count(nccl); i++) {
    const ncclshim_attempt *a = ncclshim_nccl_attempt(nccl, i);
    printf("  tried [%s] %s: %s %s\n", ncclshim_found_via_name(a->how), a->candidate,
           ncclshim_status_name(a->result), a->reason);
  }
  return 0;
}
