/* A program linked to libnccl.so.2 (the NCCL of under_*.c) and knowing nothing of ncclshim:
 * the interposer and recorder tests run it with the drop-in in LD_PRELOAD.
 *   interposed basic                  one communicator, three all-reduces and a broadcast
 *   interposed ops RANK N             rank RANK of 2 issues N all-reduces and exits
 *   interposed error | async | signal | split
 * It prints key=value lines; its stderr goes to stdout too, so the tests see ncclshim's. */
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "under.h"

static ncclComm_t start(int rank) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  strcpy(id.internal, "interposed test job");
  ncclComm_t comm = NULL;
  printf("init_result=%d\n", ncclCommInitRank(&comm, 2, id, rank));
  return comm;
}

static void all_reduces(ncclComm_t comm, int n) {
  for (int i = 0; i < n; i++)
    if (ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess)
      printf("allreduce_failed=%d\n", i);
}

/* Every mapped file whose name mentions nccl: one NCCL and the drop-in, never a second NCCL. */
static int list_nccl(struct dl_phdr_info *info, size_t size, void *count) {
  (void)size;
  const char *base = strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  if (strstr(base, "nccl") != NULL) {
    printf("mapped=%s\n", base);
    ++*(int *)count;
  }
  return 0;
}

static void basic(void) {
  int version = 0;
  ncclResult_t result = ncclGetVersion(&version);
  printf("version_result=%d\nversion=%d\n", result, version);
  ncclComm_t comm = start(0);
  all_reduces(comm, 3);
  printf("bcast_result=%d\n", ncclBcast(NULL, 16, ncclInt8, 0, comm, NULL));
  Dl_info info;
  if (dladdr((void *)(uintptr_t)&ncclAllReduce, &info))
    printf("ncclAllReduce_in=%s\n", info.dli_fname);
  printf("under_allreduce=%d\nunder_bcast=%d\nunder_broadcast=%d\n", under_calls("ncclAllReduce"),
         under_calls("ncclBcast"), under_calls("ncclBroadcast"));
  int count = 0;
  dl_iterate_phdr(list_nccl, &count);
  printf("mapped_count=%d\n", count);
}

int main(int argc, char **argv) {
  dup2(STDOUT_FILENO, STDERR_FILENO);
  setvbuf(stdout, NULL, _IONBF, 0); /* in order with ncclshim's stderr lines */
  const char *what = argc > 1 ? argv[1] : "basic";
  if (strcmp(what, "basic") == 0) {
    basic();
  } else if (strcmp(what, "ops") == 0 && argc == 4) {
    all_reduces(start(atoi(argv[2])), atoi(argv[3]));
  } else if (strcmp(what, "error") == 0) {
    ncclComm_t comm = start(0);
    all_reduces(comm, 2);
    under_fail("ncclAllReduce", ncclInternalError);
    printf("error_result=%d\n", ncclAllReduce(NULL, NULL, 8, ncclInt32, ncclMax, comm, NULL));
  } else if (strcmp(what, "async") == 0) {
    ncclComm_t comm = start(1);
    all_reduces(comm, 1);
    under_set_async(ncclRemoteError);
    ncclResult_t seen = ncclSuccess;
    for (int i = 0; i < 3; i++) ncclCommGetAsyncError(comm, &seen);
    printf("async=%d\n", seen);
  } else if (strcmp(what, "signal") == 0) {
    all_reduces(start(0), 2);
    raise(SIGUSR1);
    printf("alive=1\n");
  } else if (strcmp(what, "split") == 0) {
    ncclComm_t comm = start(0), child = NULL;
    all_reduces(comm, 1);
    printf("split_result=%d\n", ncclCommSplit(comm, 7, 0, &child, NULL));
    all_reduces(child, 2);
  } else {
    fprintf(stderr, "usage: %s basic | ops RANK N | error | async | signal | split\n", argv[0]);
    return 2;
  }
  return 0;
}
