/* Runs the default NCCL and CUDA searches in a fresh process and prints what they did as
 * key=value lines, for the hostile-input and secure-mode tests. stderr goes to stdout, so the
 * caller also sees what NCCLSHIM_DEBUG printed (lines starting "ncclshim").
 *
 * Built twice: against libncclshim.so (hardening_helper), and with the library's objects
 * linked in and -DWITH_INTERNALS (secure_helper), which can run without LD_LIBRARY_PATH and
 * also prints the well-known places and the debug switch as the library computes them.
 * Argument --ping: print "pong" and exit (used to see whether helpers can run at all). */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

#ifdef WITH_INTERNALS
#include <stdlib.h>

#include "loader/list.h"

void ncs_nccl_environment_places(ncshl_list *dirs);
void ncs_nccl_places(ncshl_list *dirs);
int ncs_debug_enabled(void);

/* The active environment's directories, then the well-known places, as one numbered list. */
static void print_internals(void) {
  ncshl_list dirs = {0};
  ncs_nccl_environment_places(&dirs);
  ncs_nccl_places(&dirs);
  size_t count = dirs.count;
  for (size_t i = 0; i < count; i++) printf("place.%zu=%s\n", i, dirs.items[i].path);
  ncshl_list_free(&dirs);
  printf("places=%zu\n", count);
  printf("debug_enabled=%d\n", ncs_debug_enabled());
}
#endif

static void print_attempt(const char *who, size_t i, const ncclshim_attempt *a) {
  printf("%s.attempt.%zu=%s|%s|%s|%s\n", who, i, ncclshim_found_via_name(a->how),
         ncclshim_status_name(a->result), a->candidate, a->reason);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--ping") == 0) {
    puts("pong");
    return 0;
  }
  dup2(STDOUT_FILENO, STDERR_FILENO);
  setvbuf(stdout, NULL, _IONBF, 0); /* keep the debug trail and our lines in order */
  printf("at_secure=%lu\n", getauxval(AT_SECURE));

  ncclshim_nccl *nccl = ncclshim_nccl_default();
  printf("nccl.status=%s\n", ncclshim_status_name(ncclshim_nccl_status(nccl)));
  printf("nccl.message=%s\n", ncclshim_nccl_message(nccl));
  printf("nccl.via=%s\n", ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)));
  printf("nccl.path=%s\n", ncclshim_nccl_path(nccl) ? ncclshim_nccl_path(nccl) : "");
  size_t count = ncclshim_nccl_attempt_count(nccl);
  printf("nccl.attempts=%zu\n", count);
  for (size_t i = 0; i < count; i++) print_attempt("nccl", i, ncclshim_nccl_attempt(nccl, i));
  int result = ncclshim_table()->ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, NULL, NULL);
  printf("nccl.call_result=%d\n", result);

  ncclshim_cuda *cuda = ncclshim_cuda_default();
  printf("cuda.status=%s\n", ncclshim_status_name(ncclshim_cuda_status(cuda)));
  printf("cuda.message=%s\n", ncclshim_cuda_message(cuda));
  printf("cuda.via=%s\n", ncclshim_found_via_name(ncclshim_cuda_found_via(cuda)));
  count = ncclshim_cuda_attempt_count(cuda);
  printf("cuda.attempts=%zu\n", count);
  for (size_t i = 0; i < count; i++) print_attempt("cuda", i, ncclshim_cuda_attempt(cuda, i));
#ifdef WITH_INTERNALS
  print_internals();
#endif
  printf("end=1\n");
  return 0;
}
