/* The search's candidates for the doctor and --explain. THE ONE PLACE that asks the library
 * which NCCL files its search names: today through the public visible list
 * (ncclshim_nccl_list_visible), which gives each file's path and step. When the loader offers
 * its candidates as (path, step, reason) records, only this file changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "inventory.h"

static const char *step_reason(ncclshim_found_via how) {
  static const char *const reasons[] = {
      [NCCLSHIM_VIA_PRELOADED] = "already mapped in this process: reused before any search",
      [NCCLSHIM_VIA_LIBRARY_PATH] = "a directory of LD_LIBRARY_PATH",
      [NCCLSHIM_VIA_ACTIVE_ENV] =
          "the active Python or conda environment (VIRTUAL_ENV, "
          "CONDA_PREFIX, the program's prefix)",
      [NCCLSHIM_VIA_LD_CACHE] = "registered in the ld.so cache under libnccl.so.2",
      [NCCLSHIM_VIA_WELL_KNOWN] = "a well-known place (NCCL_HOME, CUDA_HOME)",
  };
  /* The other steps need no more words than their names. */
  if ((unsigned)how < sizeof(reasons) / sizeof(reasons[0]) && reasons[how]) return reasons[how];
  return ncclshim_found_via_name(how);
}

int probe_candidates(probe_candidate **out, size_t *count) {
  *out = NULL;
  *count = 0;
  ncclshim_nccl_list *list = NULL;
  if (ncclshim_nccl_list_visible(NULL, &list) != NCCLSHIM_OK) {
    fprintf(stderr, "ncclshim-probe: cannot list the NCCLs visible: %s\n", ncclshim_last_error());
    return -1;
  }
  size_t n = ncclshim_nccl_list_count(list);
  probe_candidate *items = n ? calloc(n, sizeof(*items)) : NULL;
  if (n && items == NULL) {
    ncclshim_nccl_list_free(list);
    fprintf(stderr, "ncclshim-probe: out of memory\n");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const ncclshim_nccl_entry *e = ncclshim_nccl_list_entry(list, i);
    items[i].path = strdup(e->path);
    items[i].how = e->how;
    items[i].mapped = e->mapped;
    snprintf(items[i].reason, sizeof(items[i].reason), "%s", step_reason(e->how));
    if (items[i].path == NULL) {
      probe_candidates_free(items, i);
      ncclshim_nccl_list_free(list);
      fprintf(stderr, "ncclshim-probe: out of memory\n");
      return -1;
    }
  }
  ncclshim_nccl_list_free(list);
  *out = items;
  *count = n;
  return 0;
}

void probe_candidates_free(probe_candidate *list, size_t count) {
  for (size_t i = 0; i < count; i++) free(list[i].path);
  free(list);
}
