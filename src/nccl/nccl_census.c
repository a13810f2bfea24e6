/* The census: every NCCL mapped in the process, found from memory by the function that every
 * NCCL release exports, ncclGetVersion, whatever the file is called and also when NCCL is
 * linked into the program itself. ncclshim's drop-in defines the name too and is left out. */
#include <stdlib.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "loader/objects.h"
#include "nccl_handle.h"
#include "nccl_names.h"

static int is_dropin(const ncshl_mapped *o, const ncshl_mapped *dropins, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (strcmp(dropins[i].path, o->path) == 0) return 1;
  return 0;
}

/* The version a mapped NCCL reports; 0 when its ncclGetVersion fails. */
static int mapped_version(void *address) {
  ncclshim_pfn_ncclGetVersion get_version;
  memcpy(&get_version, &address, sizeof(get_version));
  int code = 0;
  return get_version(&code) == ncclSuccess ? ncclshim_decode_version(code, NULL, NULL, NULL) : 0;
}

int ncs_nccl_take_census(const void *chosen, int chosen_version, ncclshim_nccl_entry **entries,
                         size_t *count) {
  *entries = NULL;
  *count = 0;
  ncshl_mapped *objects = NULL, *dropins = NULL;
  size_t found = 0, dropin_count = 0;
  if (ncshl_objects_defining("ncclGetVersion", &objects, &found) != 0) return -1;
  if (ncshl_objects_defining(NCCLSHIM_DROPIN_MARKER_NAME, &dropins, &dropin_count) != 0) {
    ncshl_objects_free(objects, found);
    return -1;
  }
  int failed = 0;
  ncclshim_nccl_entry *list = found ? calloc(found, sizeof(*list)) : NULL;
  if (found && list == NULL) failed = 1;
  size_t n = 0;
  for (size_t i = 0; i < found && !failed; i++) {
    ncshl_mapped *o = &objects[i];
    /* A variable called ncclGetVersion is no NCCL (and is never called). */
    if (o->kind != NCSHL_SYMBOL_FUNCTION || is_dropin(o, dropins, dropin_count)) continue;
    list[n] = (ncclshim_nccl_entry){.path = o->path,
                                    /* the chosen one's was asked once already */
                                    .version = o->address == chosen && chosen != NULL
                                                   ? chosen_version
                                                   : mapped_version(o->address),
                                    .how = NCCLSHIM_VIA_PRELOADED,
                                    .mapped = 1,
                                    .in_program = o->is_program,
                                    .chosen = chosen != NULL && o->address == chosen};
    o->path = NULL; /* now the entry's */
    n++;
  }
  ncshl_objects_free(objects, found);
  ncshl_objects_free(dropins, dropin_count);
  if (failed) return -1;
  if (n == 0) {
    free(list);
    list = NULL;
  }
  *entries = list;
  *count = n;
  return 0;
}

void ncs_nccl_entries_free(ncclshim_nccl_entry *entries, size_t count) {
  for (size_t i = 0; i < count; i++) free((char *)entries[i].path);
  free(entries);
}
