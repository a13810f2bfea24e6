/* Runs one CUDA driver search in a fresh process and prints the outcome as key=value lines,
 * for the search tests. Arguments: [--preload FILE] [--path FILE] [--init] [--call]. Without
 * --path it uses the default handle (twice, to check that it is one handle). */
#include <stdio.h>

#include "ncclshim/cuda.h"

#include "scenario_print.h"
#include "support.h"

int main(int argc, char **argv) {
  ncclshim_cuda_options options = NCCLSHIM_CUDA_OPTIONS_INIT;
  int init = 0, call = 0;
  const scenario_option known[] = {{"--path", &options.path, NULL},
                                   {"--init", NULL, &init},
                                   {"--call", NULL, &call},
                                   {NULL, NULL, NULL}};
  int failed = scenario_options(argc, argv, known);
  if (failed) return failed;
  ncclshim_cuda *cuda = NULL;
  if (options.path != NULL) {
    ncclshim_cuda_open(&options, &cuda);
  } else {
    cuda = ncclshim_cuda_default();
    printf("same_default=%d\n", cuda == ncclshim_cuda_default());
  }
  printf("status=%s\n", ncclshim_status_name(ncclshim_cuda_status(cuda)));
  printf("message=%s\n", ncclshim_cuda_message(cuda));
  printf("via=%s\n", ncclshim_found_via_name(ncclshim_cuda_found_via(cuda)));
  printf("path=%s\n", ncclshim_cuda_path(cuda) ? ncclshim_cuda_path(cuda) : "");
  printf("driver=%d\n", ncclshim_cuda_driver_version(cuda, NULL, NULL));
  printf("preloaded=%d\n", ncclshim_cuda_preloaded(cuda));
  printf("stub=%d\n", ncclshim_cuda_is_stub(cuda));
  size_t count = ncclshim_cuda_attempt_count(cuda);
  printf("attempts=%zu\n", count);
  for (size_t i = 0; i < count; i++) scenario_print_attempt(i, ncclshim_cuda_attempt(cuda, i));
  if (init) printf("init=%s\n", ncclshim_status_name(ncclshim_cuda_init(cuda)));
  if (call) {
    printf("call_result=%d\n", ncclshim_cuda_functions(cuda)->cuInit(0));
    printf("call_message=%s\n", ncclshim_last_error());
  }
  return 0;
}
