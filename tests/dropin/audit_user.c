/* A program that binds NCCL itself, as vLLM's pynccl or JAX's loader do: dlopen of a path,
 * then dlsym of each function. LD_PRELOAD cannot see its calls; the drop-in's audit mode
 * (LD_AUDIT) can. Its NCCL is the interposer tests' libnccl.so.2 (under_*.c).
 *   audit_user LIBRARY ops RANK N   rank RANK of 2 issues N all-reduces and exits
 *   audit_user LIBRARY split        a split with NCCL_SPLIT_NOCOLOR, then one with color 3
 *   audit_user LIBRARY reopen OTHER  an all-reduce, dlclose of NCCL, dlopen of OTHER (whose
 *                                    mapping may take the freed memory), NCCL opened again
 *                                    and two all-reduces
 *   audit_user DROPIN unload SIGNO   dlopen and dlclose of the drop-in, then raise(SIGNO)
 *   audit_user DROPIN restart        a SIGUSR1 handler without SA_RESTART, then dlopen of the
 *                                    drop-in (whose dump signal is USR1), then a blocking
 *                                    read that SIGUSR1 must interrupt (EINTR), as it did
 *                                    before the drop-in was loaded
 * It prints key=value lines (where dlsym's ncclAllReduce lies, the results). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclshim/nccl_functions.h"

typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*all_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                      ncclComm_t, cudaStream_t);
typedef ncclResult_t (*split_fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);

static volatile sig_atomic_t handled;
static void on_usr1(int signo) { handled = signo; }

static volatile int read_returned;
static pthread_t reader;

/* Sends SIGUSR1 to the reader every 10 ms until its read returns; after 3 s, writes a byte so
 * that a read the signal does not interrupt returns anyway. */
static void *interrupt_reader(void *pipe_write) {
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 300 && !read_returned; i++) {
    pthread_kill(reader, SIGUSR1);
    nanosleep(&tick, NULL);
  }
  if (!read_returned && write(*(int *)pipe_write, "x", 1) != 1) printf("write_failed=1\n");
  return NULL;
}

static int restart(const char *dropin) {
  struct sigaction action = {.sa_handler = on_usr1}; /* no SA_RESTART */
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR1, &action, NULL);
  if (dlopen(dropin, RTLD_NOW | RTLD_LOCAL) == NULL) return 1;
  int fds[2];
  if (pipe(fds) != 0) return 1;
  reader = pthread_self();
  pthread_t sender;
  pthread_create(&sender, NULL, interrupt_reader, &fds[1]);
  char byte;
  ssize_t n = read(fds[0], &byte, 1);
  int error = errno;
  read_returned = 1;
  pthread_join(sender, NULL);
  printf("read_eintr=%d\nhandled=%d\n", n < 0 && error == EINTR, (int)handled);
  return 0;
}

static void *symbol(void *lib, const char *name) {
  void *address = dlsym(lib, name);
  if (address == NULL) {
    printf("missing=%s\n", name);
    exit(1);
  }
  return address;
}

int main(int argc, char **argv) {
  dup2(STDOUT_FILENO, STDERR_FILENO);
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 3) {
    fprintf(stderr, "usage: %s LIBRARY ops RANK N | split\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[2], "restart") == 0) return restart(argv[1]);
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("dlopen_error=%s\n", dlerror());
    return 1;
  }
  if (strcmp(argv[2], "unload") == 0 && argc == 4) {
    printf("dlclose=%d\n", dlclose(lib));
    printf("still_mapped=%d\n", dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD) != NULL);
    raise(atoi(argv[3]));
    return 0;
  }
  init_fn init = (init_fn)(uintptr_t)symbol(lib, "ncclCommInitRank");
  all_reduce_fn all_reduce = (all_reduce_fn)(uintptr_t)symbol(lib, "ncclAllReduce");
  Dl_info info;
  if (dladdr((void *)(uintptr_t)all_reduce, &info)) printf("ncclAllReduce_in=%s\n", info.dli_fname);
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  strcpy(id.internal, "audit test job");
  int rank = strcmp(argv[2], "ops") == 0 && argc == 5 ? atoi(argv[3]) : 0;
  ncclComm_t comm = NULL;
  printf("init_result=%d\n", init(&comm, 2, id, rank));
  if (strcmp(argv[2], "ops") == 0 && argc == 5) {
    for (int i = 0; i < atoi(argv[4]); i++)
      if (all_reduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess)
        printf("allreduce_failed=%d\n", i);
  } else if (strcmp(argv[2], "reopen") == 0 && argc == 4) {
    all_reduce(NULL, NULL, 8, ncclFloat32, ncclSum, comm, NULL);
    dlclose(lib);
    void *other = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    printf("other=%d\n", other != NULL);
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    init = (init_fn)(uintptr_t)symbol(lib, "ncclCommInitRank");
    all_reduce = (all_reduce_fn)(uintptr_t)symbol(lib, "ncclAllReduce");
    printf("init_again_result=%d\n", init(&comm, 2, id, 0));
    for (int i = 0; i < 2; i++) all_reduce(NULL, NULL, 16, ncclFloat32, ncclSum, comm, NULL);
  } else if (strcmp(argv[2], "split") == 0) {
    split_fn split = (split_fn)(uintptr_t)symbol(lib, "ncclCommSplit");
    ncclComm_t none = NULL, child = NULL;
    printf("nocolor_result=%d\n", split(comm, NCCL_SPLIT_NOCOLOR, 0, &none, NULL));
    printf("split_result=%d\n", split(comm, 3, 0, &child, NULL));
    all_reduce(NULL, NULL, 8, ncclFloat32, ncclSum, child, NULL);
  } else {
    return 2;
  }
  return 0;
}
