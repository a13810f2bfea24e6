/* Runs one NCCL search in a fresh process and prints the outcome as key=value lines, for the
 * search tests. Arguments: [--preload FILE] [--path FILE] [--min VERSION] [--call]. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/ncclshim.h"

int main(int argc, char **argv) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  int call = 0, use_default = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc) {
      if (dlopen(argv[++i], RTLD_NOW | RTLD_LOCAL) == NULL) {
        printf("preload_error=%s\n", dlerror());
        return 3;
      }
    } else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc) {
      options.path = argv[++i];
      use_default = 0;
    } else if (strcmp(argv[i], "--min") == 0 && i + 1 < argc) {
      options.min_version = atoi(argv[++i]);
      use_default = 0;
    } else if (strcmp(argv[i], "--call") == 0) {
      call = 1;
    } else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  ncclshim_nccl *nccl = NULL;
  if (use_default)
    nccl = ncclshim_nccl_default();
  else
    ncclshim_nccl_open(&options, &nccl);
  char version[16];
  printf("status=%s\n", ncclshim_status_name(ncclshim_nccl_status(nccl)));
  printf("message=%s\n", ncclshim_nccl_message(nccl));
  printf("via=%s\n", ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)));
  printf("path=%s\n", ncclshim_nccl_path(nccl) ? ncclshim_nccl_path(nccl) : "");
  printf("version=%s\n",
         ncclshim_format_version(ncclshim_nccl_version(nccl), version, sizeof(version)));
  printf("preloaded=%d\n", ncclshim_nccl_preloaded(nccl));
  size_t count = ncclshim_nccl_attempt_count(nccl);
  printf("attempts=%zu\n", count);
  for (size_t i = 0; i < count; i++) {
    const ncclshim_attempt *a = ncclshim_nccl_attempt(nccl, i);
    printf("attempt.%zu=%s|%s|%s|%s\n", i, ncclshim_found_via_name(a->how),
           ncclshim_status_name(a->result), a->candidate, a->reason);
  }
  if (call) {
    int result = ncclshim_nccl_functions(nccl)->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum,
                                                              NULL, NULL);
    printf("call_result=%d\n", result);
    printf("call_message=%s\n", ncclshim_last_error());
    printf("error_string=%s\n",
           ncclshim_nccl_functions(nccl)->ncclGetErrorString(ncclInvalidUsage));
  }
  return 0;
}
