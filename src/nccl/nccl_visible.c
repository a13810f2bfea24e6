/* Every NCCL the search can see, for people choosing between the two or three a machine often
 * has: the census of the process, then each file of the search's steps, each once, with the
 * version its banner states. Nothing is loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/diag.h"
#include "loader/elf_check.h"
#include "src/handle.h"
#include "src/internal.h"
#include "nccl_handle.h"

struct ncclshim_nccl_list {
  ncclshim_nccl_entry *items;
  size_t count;
  int out_of_memory;
};

static void add(ncclshim_nccl_list *list, const char *file, ncclshim_found_via how,
                const ncclshim_nccl *chosen) {
  char reason[256];
  if (ncshl_elf_check(file, reason, sizeof(reason)) != NCSHL_OK) return;
  char *path = realpath(file, NULL);
  if (path == NULL) return;
  for (size_t i = 0; i < list->count; i++) {
    if (strcmp(list->items[i].path, path) == 0) { /* seen in an earlier step, or mapped */
      free(path);
      return;
    }
  }
  int version = ncs_nccl_read_banner(path, NULL);
  ncclshim_nccl_entry *grown = realloc(list->items, (list->count + 1) * sizeof(*grown));
  if (grown == NULL) {
    free(path);
    list->out_of_memory = 1;
    return;
  }
  list->items = grown;
  const char *chosen_path = ncclshim_nccl_path(chosen);
  list->items[list->count++] = (ncclshim_nccl_entry){
      .path = path,
      .version = version,
      .how = how,
      .chosen = chosen_path != NULL && strcmp(chosen_path, path) == 0,
  };
}

int ncs_nccl_candidates(const char *path, int with_overrides, ncshl_candidates *out) {
  ncshl_search search = ncs_nccl_binding.search;
  search.explicit_path = with_overrides ? path : NULL;
  if (!with_overrides) search.env_var = NULL;
  search.ld_cache = ncs_ld_cache_file();
  return ncshl_search_list(&search, out);
}

ncclshim_status ncclshim_nccl_list_visible(const ncclshim_nccl *chosen, ncclshim_nccl_list **out) {
  if (out == NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_nccl_list_visible: out is NULL");
  ncclshim_nccl_list *list = calloc(1, sizeof(*list));
  if (list == NULL ||
      ncs_nccl_take_census(chosen ? chosen->get_version : NULL, chosen ? chosen->version : 0,
                           &list->items, &list->count)) {
    free(list);
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_list_visible: out of memory");
  }
  /* The chosen library is named by the step that found it, as the handle says ("found via"). */
  for (size_t i = 0; i < list->count; i++)
    if (list->items[i].chosen) list->items[i].how = ncclshim_nccl_found_via(chosen);
  /* Then the files of the binding's own steps, in its order, without the overrides (which name
   * one file for one process, not what the machine has). */
  ncshl_candidates candidates;
  if (ncs_nccl_candidates(NULL, 0, &candidates) != 0) list->out_of_memory = 1;
  for (size_t i = 0; !list->out_of_memory && i < candidates.count; i++) {
    const ncshl_candidate *c = &candidates.items[i];
    if (c->reach == NCSHL_REACH_FILE) add(list, c->path, (ncclshim_found_via)c->step, chosen);
  }
  ncshl_candidates_free(&candidates);
  if (list->out_of_memory) {
    ncclshim_nccl_list_free(list);
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_nccl_list_visible: out of memory");
  }
  *out = list;
  return NCCLSHIM_OK;
}

NCCLSHIM_LIST_ACCESSORS(ncclshim_nccl_list, ncclshim_nccl_list, ncclshim_nccl_entry)

void ncclshim_nccl_list_free(ncclshim_nccl_list *list) {
  if (list == NULL) return;
  ncs_nccl_entries_free(list->items, list->count);
  free(list);
}
