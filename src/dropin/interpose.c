/* How the drop-in stands to the NCCL it forwards to. Under LD_PRELOAD over a program linked
 * to libnccl.so.2 (or loaded beside a library that is), the program's NCCL is mapped before
 * the first call, so the loader's first step reuses that mapping: the drop-in interposes on
 * it, and NCCL's names resolve to the drop-in first. */
#include <dlfcn.h>
#include <stdio.h>

#include "src/internal.h"
#include "loader/list.h"
#include "interpose.h"
#include "say.h"

void ncs_dropin_report(const ncclshim_nccl *nccl) {
  const char *path = ncclshim_nccl_path(nccl);
  /* The next definition of an NCCL name after the drop-in's, in the global scope. */
  void *next = dlsym(RTLD_NEXT, "ncclGetVersion");
  Dl_info info;
  char line[3 * PATH_MAX];
  if (next != NULL && dladdr(next, &info) && info.dli_fname != NULL &&
      !ncshl_same_file(info.dli_fname, path)) {
    snprintf(line, sizeof(line),
             "warning: two NCCLs in this process: the program's %s and %s, which the drop-in "
             "loaded (%s) and forwards to",
             info.dli_fname, path, ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)));
    ncs_dropin_line(line);
  }
  if (!ncs_debug_enabled()) return;
  char version[16];
  ncclshim_format_version(ncclshim_nccl_version(nccl), version, sizeof(version));
  if (ncclshim_nccl_preloaded(nccl))
    snprintf(line, sizeof(line),
             "interposing: NCCL %s from %s was already loaded in this process; every call to "
             "NCCL's names goes through the drop-in to it (no second copy)",
             version, path);
  else
    snprintf(line, sizeof(line), "forwarding to NCCL %s from %s (%s)", version, path,
             ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)));
  ncs_dropin_line(line);
}
