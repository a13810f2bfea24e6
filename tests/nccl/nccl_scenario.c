/* Runs one NCCL search in a fresh process and prints the outcome as key=value lines, for the
 * search tests. Arguments: [--preload FILE] [--path FILE] [--min VERSION] [--refuse] [--call]
 * [--list] [--mapped FILE]: --refuse sets refuse_second_copy, --list prints every NCCL
 * visible, --mapped says at the end whether FILE is mapped in the process. Also built with a
 * fake NCCL linked into the program (nccl_scenario_static). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

#include "scenario_print.h"
#include "support.h"

int main(int argc, char **argv) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  const char *min_version = NULL, *mapped = NULL;
  int call = 0, list = 0;
  const scenario_option known[] = {{"--path", &options.path, NULL},
                                   {"--min", &min_version, NULL},
                                   {"--refuse", NULL, &options.refuse_second_copy},
                                   {"--mapped", &mapped, NULL},
                                   {"--list", NULL, &list},
                                   {"--call", NULL, &call},
                                   {NULL, NULL, NULL}};
  int failed = scenario_options(argc, argv, known);
  if (failed) return failed;
  if (min_version != NULL) options.min_version = atoi(min_version);
  /* Any option given makes it an open of its own; none, the default handle. */
  int use_default = options.path == NULL && min_version == NULL && !options.refuse_second_copy;
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
  for (size_t i = 0; i < count; i++) scenario_print_attempt(i, ncclshim_nccl_attempt(nccl, i));
  char fingerprint[128];
  /* What the fingerprint cost in page faults: an mmap of the whole file shows there. */
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  printf("fingerprint=%s\n", ncclshim_nccl_fingerprint(nccl, fingerprint, sizeof(fingerprint)));
  getrusage(RUSAGE_SELF, &after);
  printf("fingerprint_faults=%ld\n",
         (after.ru_minflt - before.ru_minflt) + (after.ru_majflt - before.ru_majflt));
  printf("census=%zu\n", ncclshim_nccl_census_count(nccl));
  for (size_t i = 0; i < ncclshim_nccl_census_count(nccl); i++) {
    const ncclshim_nccl_entry *e = ncclshim_nccl_census_entry(nccl, i);
    printf("census.%zu=%s|%d|%d|%s\n", i,
           ncclshim_format_version(e->version, version, sizeof(version)), e->in_program, e->chosen,
           e->path);
  }
  if (list) {
    ncclshim_nccl_list *visible = NULL;
    printf("list_status=%s\n", ncclshim_status_name(ncclshim_nccl_list_visible(nccl, &visible)));
    printf("visible=%zu\n", ncclshim_nccl_list_count(visible));
    for (size_t i = 0; i < ncclshim_nccl_list_count(visible); i++) {
      const ncclshim_nccl_entry *e = ncclshim_nccl_list_entry(visible, i);
      printf("visible.%zu=%s|%s|%d|%d|%s\n", i, ncclshim_found_via_name(e->how),
             ncclshim_format_version(e->version, version, sizeof(version)), e->mapped, e->chosen,
             e->path);
    }
    ncclshim_nccl_list_free(visible);
  }
  if (call) {
    int result = ncclshim_nccl_functions(nccl)->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum,
                                                              NULL, NULL);
    printf("call_result=%d\n", result);
    printf("call_message=%s\n", ncclshim_last_error());
    printf("error_string=%s\n",
           ncclshim_nccl_functions(nccl)->ncclGetErrorString(ncclInvalidUsage));
  }
  if (mapped != NULL) {
    void *handle = dlopen(mapped, RTLD_NOW | RTLD_NOLOAD);
    printf("mapped=%d\n", handle != NULL);
  }
  return 0;
}
