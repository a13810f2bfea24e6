/* A program linked to libnccl.so.2 (the NCCL of under_*.c) and knowing nothing of ncclshim:
 * the interposer and recorder tests run it with the drop-in in LD_PRELOAD.
 *   interposed basic                  one communicator, three all-reduces and a broadcast
 *   interposed ops RANK N             rank RANK of 2 issues N all-reduces and exits
 *   interposed error | async | signal | split
 *   interposed nocolor RANK         PyTorch's new_group: rank 0 opts out of a first split
 *                                   (NCCL_SPLIT_NOCOLOR), then both split with color 3
 *   interposed errors N             N failing all-reduces, then one failing otherwise
 *   interposed badrank              ncclCommInitRank with rank -1, refused by NCCL
 *   interposed query                three ncclParamGetI32 (a query) answered, one failing
 *   interposed fulldisk             a dump, then a second one that hits the file size limit
 *   interposed fork                 a child (forked after two all-reduces) and its parent dump
 *   interposed early                the dump signal before any NCCL call
 *   interposed commabort | abort    ncclCommAbort; abort()
 *   interposed raise SIGNO [TIMES]  two all-reduces, then raise(SIGNO), TIMES times (1)
 *   interposed actions              the actions of SIGUSR1 and SIGABRT (default or not)
 *   interposed many N               N communicators alive at once, then half destroyed
 *   interposed threads              8 threads making, using and destroying communicators,
 *                                   while the main thread dumps (SIGUSR1) again and again
 *   interposed tworanks             ranks 0 and 1 of one communicator in this process: rank 0
 *                                   enqueues 3 all-reduces, rank 1 2 (its second of another
 *                                   count); each splits (color 7, key its rank), each child
 *                                   enqueues 1
 *   interposed vfork                a vfork child (after two all-reduces) that gets the dump
 *                                   signal before it exits, then its parent dumps (SIGUSR1)
 *   interposed vforkexit            the same, the child ending by exit() (destructors run)
 *   interposed handle N             N all-reduces through the linked names, one through dlsym
 *                                   on NCCL's own handle (as a program that dlopens it), then
 *                                   the dump signal (SIGUSR1)
 *   interposed forkuse              a child forked after two all-reduces issues a third on its
 *                                   parent's communicator; both dump (SIGUSR1)
 *   interposed forkreuse            two children forked in turn with the same pid (in a PID
 *                                   namespace of its own, /proc/sys/kernel/ns_last_pid set
 *                                   before each fork); each dumps (SIGUSR1)
 *   interposed pipeline RANK COUNT  rank 0 sends 3 times to rank 1 (COUNT floats), rank 1
 *                                   receives 3 times from rank 0; then one all-reduce each
 *   interposed plant                a dump (SIGUSR1); its name then taken by a directory (as
 *                                   another user's file would be in a sticky directory);
 *                                   a second dump
 *   interposed movedir              a dump, the dump directory renamed (DIR-moved), a dump
 *   interposed interrupted          a long dump (SIGUSR1, 20000 calls) that another thread's
 *                                   abort() interrupts as soon as its temporary file appears
 *   interposed captured | hang | hanggroup   with a fake CUDA driver (interposed_cuda.c)
 * It prints key=value lines; its stderr goes to stdout too, so the tests see ncclshim's. */
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interposed.h"
#include "under.h"

ncclComm_t interposed_start(int rank) {
  printf("process=%d\n", (int)getpid());
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  strcpy(id.internal, "interposed test job");
  ncclComm_t comm = NULL;
  printf("init_result=%d\n", ncclCommInitRank(&comm, 2, id, rank));
  printf("comm_pointer=%llx\n", (unsigned long long)(uintptr_t)comm);
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
  ncclComm_t comm = interposed_start(0);
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

static void nocolor(int rank) {
  ncclComm_t comm = interposed_start(rank), first = NULL, second = NULL;
  printf("first_result=%d\n",
         ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &first, NULL));
  printf("second_result=%d\n", ncclCommSplit(comm, 3, rank, &second, NULL));
  all_reduces(second, 2);
}

static void errors(int n) {
  ncclComm_t comm = interposed_start(0);
  for (int i = 0; i < n; i++) {
    under_fail("ncclAllReduce", ncclInternalError);
    ncclAllReduce(NULL, NULL, 8, ncclInt32, ncclMax, comm, NULL);
  }
  under_fail("ncclAllReduce", ncclInvalidUsage);
  printf("other_result=%d\n", ncclAllReduce(NULL, NULL, 8, ncclInt32, ncclMax, comm, NULL));
}

/* A rank that NCCL refuses (-1): the failed call's line keeps the argument as given. */
static void bad_rank(void) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  strcpy(id.internal, "interposed test job");
  ncclComm_t comm = NULL;
  under_fail("ncclCommInitRank", ncclInvalidArgument);
  printf("init_result=%d\n", ncclCommInitRank(&comm, 2, id, -1));
}

/* A query (its row's role is QUERY) that succeeds three times, then fails once. */
static void query(void) {
  all_reduces(interposed_start(0), 1);
  ncclshim_param_handle_t handle = NULL;
  int32_t value = 0;
  for (int i = 0; i < 3; i++) ncclParamGetI32(handle, &value);
  under_fail("ncclParamGetI32", ncclInvalidArgument);
  printf("query_result=%d\n", ncclParamGetI32(handle, &value));
  printf("query_calls=%d\n", under_calls("ncclParamGetI32"));
}

/* A file size limit stands for a full disk: writes past it fail (EFBIG). */
static void full_disk(void) {
  ncclComm_t comm = interposed_start(0);
  all_reduces(comm, 2);
  raise(SIGUSR1);
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {300, 300};
  printf("limit=%d\n", setrlimit(RLIMIT_FSIZE, &limit));
  all_reduces(comm, 3);
  raise(SIGUSR1);
}

static void forked(void) {
  all_reduces(interposed_start(0), 2);
  pid_t child = fork();
  if (child == 0) {
    raise(SIGUSR1); /* the job's dump signal reaches a data-loader worker too */
    _exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  printf("child_status=%d\n", status);
  raise(SIGUSR1);
}

static void actions(void) {
  struct sigaction usr1, abrt;
  sigaction(SIGUSR1, NULL, &usr1);
  sigaction(SIGABRT, NULL, &abrt);
  printf("usr1_default=%d\nabrt_default=%d\n", usr1.sa_handler == SIG_DFL,
         abrt.sa_handler == SIG_DFL);
}

static void many(int n) {
  ncclComm_t *comms = calloc((size_t)n, sizeof(*comms));
  for (int i = 0; i < n; i++) {
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    snprintf(id.internal, sizeof(id.internal), "communicator %d", i);
    if (ncclCommInitRank(&comms[i], 2, id, 0) != ncclSuccess) printf("init_failed=%d\n", i);
    all_reduces(comms[i], 1);
  }
  for (int i = 0; i < n; i += 2) ncclCommDestroy(comms[i]);
  free(comms);
}

/* One thread: 100 communicators in turn, 10 all-reduces on each; the last one stays. */
static void *churn(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < 100; i++) {
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    snprintf(id.internal, sizeof(id.internal), "thread %d communicator %d", t, i);
    ncclComm_t comm = NULL;
    if (ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess) return (void *)1;
    all_reduces(comm, 10);
    if (i < 99) ncclCommDestroy(comm);
  }
  return NULL;
}

static void threads(void) {
  interposed_start(
      0); /* the process's rank, known before the first dump: one file name throughout */
  pthread_t workers[8];
  for (int t = 0; t < 8; t++) pthread_create(&workers[t], NULL, churn, (void *)(intptr_t)t);
  for (int i = 0; i < 5; i++) raise(SIGUSR1);
  int failed = 0;
  for (int t = 0; t < 8; t++) {
    void *result;
    pthread_join(workers[t], &result);
    failed += result != NULL;
  }
  printf("threads_failed=%d\n", failed);
  raise(SIGUSR1);
}

/* The name of the first dump in `dir` (static), or "". */
static const char *first_dump(const char *dir) {
  static char name[512];
  name[0] = '\0';
  DIR *d = opendir(dir);
  for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, "ncclshim-record-", 16) == 0)
      snprintf(name, sizeof(name), "%s", e->d_name);
  if (d != NULL) closedir(d);
  return name;
}

static void plant_or_move(int plant) {
  const char *dir = getenv("NCCLSHIM_RECORD_DIR");
  all_reduces(interposed_start(0), 1);
  raise(SIGUSR1);
  char from[4096], to[4096];
  if (plant) {
    snprintf(from, sizeof(from), "%s/%s", dir, first_dump(dir));
    snprintf(to, sizeof(to), "%s/kept", dir);
    printf("planted=%d\n", rename(from, to) == 0 && mkdir(from, 0700) == 0);
  } else {
    snprintf(to, sizeof(to), "%s-moved", dir);
    printf("moved=%d\n", rename(dir, to) == 0);
  }
  raise(SIGUSR1);
}

/* Waits (every 100 us, at most 20 s) for the dump's temporary file, then calls abort(). */
static void *abort_during_dump(void *dir) {
  struct timespec tick = {0, 100 * 1000};
  for (int i = 0; i < 200000; i++) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
      if (strncmp(e->d_name, ".ncclshim-record-", 17) == 0) {
        printf("aborting_during_dump=1\n");
        abort();
      }
    if (d != NULL) closedir(d);
    nanosleep(&tick, NULL);
  }
  return NULL;
}

static void interrupted(void) {
  all_reduces(interposed_start(0), 20000);
  pthread_t aborter;
  pthread_create(&aborter, NULL, abort_during_dump, getenv("NCCLSHIM_RECORD_DIR"));
  raise(SIGUSR1);
  pthread_join(aborter, NULL);
}

static void two_ranks(void) {
  ncclComm_t rank0 = interposed_start(0), rank1 = interposed_start(1), child0 = NULL, child1 = NULL;
  all_reduces(rank0, 3);
  all_reduces(rank1, 1);
  ncclAllReduce(NULL, NULL, 512, ncclFloat32, ncclSum, rank1, NULL); /* rank 0's was 1024 */
  printf("split_results=%d,%d\n", ncclCommSplit(rank0, 7, 0, &child0, NULL),
         ncclCommSplit(rank1, 7, 1, &child1, NULL));
  all_reduces(child0, 1);
  all_reduces(child1, 1);
}

static void fork_use(void) {
  ncclComm_t comm = interposed_start(0);
  all_reduces(comm, 2);
  pid_t child = fork();
  if (child == 0) {
    all_reduces(comm, 1);
    raise(SIGUSR1);
    _exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  printf("child_status=%d\nparent_thread=%d\n", status, (int)getpid());
  raise(SIGUSR1);
}

/* The child shares its parent's memory until it exits: the dump signal's handler runs in it,
 * or (exit) the library's destructors. */
static void vfork_then(int by_exit) {
  all_reduces(interposed_start(0), 2);
  pid_t child = vfork();
  if (child == 0 && by_exit) exit(0);
  if (child == 0) {
    raise(SIGUSR1);
    _exit(0);
  }
  int status = -1;
  waitpid(child, &status, 0);
  printf("child_status=%d\n", status);
  raise(SIGUSR1);
}

static void vforked(void) { vfork_then(0); }
static void vforked_exit(void) { vfork_then(1); }

static void through_handle(int n) {
  ncclComm_t comm = interposed_start(0);
  all_reduces(comm, n);
  void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) =
      nccl == NULL
          ? NULL
          : (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t))(uintptr_t)dlsym(nccl, "ncclAllReduce");
  printf("handle_result=%d\n",
         all_reduce == NULL ? -1
                            : (int)all_reduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL));
  raise(SIGUSR1);
}

static void fork_reuse(void) {
  all_reduces(interposed_start(0), 2);
  for (int i = 0; i < 2; i++) {
    FILE *last = fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (last == NULL || fprintf(last, "100") < 0 || fclose(last) != 0) {
      printf("no_ns_last_pid=1\n");
      return;
    }
    pid_t child = fork();
    if (child == 0) {
      raise(SIGUSR1);
      _exit(0);
    }
    printf("child_pid=%d\n", (int)child);
    waitpid(child, NULL, 0);
  }
}

/* The scenarios that are one function: of no argument, or of one number (argv[2]). */
static const struct {
  const char *name;
  void (*run)(void);
} plain[] = {{"query", query},        {"fulldisk", full_disk},     {"fork", forked},
             {"tworanks", two_ranks}, {"forkuse", fork_use},       {"forkreuse", fork_reuse},
             {"vfork", vforked},      {"vforkexit", vforked_exit}, {"interrupted", interrupted},
             {"actions", actions},    {"threads", threads},        {"badrank", bad_rank}};
static const struct {
  const char *name;
  void (*run)(int);
} of_number[] = {
    {"nocolor", nocolor}, {"errors", errors}, {"many", many}, {"handle", through_handle}};

static int more(int argc, char **argv) {
  const char *what = argv[1];
  for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
    if (strcmp(what, plain[i].name) == 0) {
      plain[i].run();
      return 0;
    }
  for (size_t i = 0; i < sizeof(of_number) / sizeof(of_number[0]) && argc == 3; i++)
    if (strcmp(what, of_number[i].name) == 0) {
      of_number[i].run(atoi(argv[2]));
      return 0;
    }
  if (strcmp(what, "early") == 0) {
    raise(SIGUSR1);
    printf("alive=1\n");
  } else if (strcmp(what, "commabort") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduces(comm, 2);
    printf("abort_result=%d\n", ncclCommAbort(comm));
  } else if (strcmp(what, "abort") == 0) {
    all_reduces(interposed_start(0), 2);
    abort();
  } else if (strcmp(what, "raise") == 0 && (argc == 3 || argc == 4)) {
    all_reduces(interposed_start(0), 2);
    for (int i = 0; i < (argc == 4 ? atoi(argv[3]) : 1); i++) raise(atoi(argv[2]));
    printf("alive=1\n");
  } else if (strcmp(what, "pipeline") == 0 && argc == 4) {
    int rank = atoi(argv[2]);
    ncclComm_t comm = interposed_start(rank);
    for (int i = 0; i < 3; i++)
      if (rank == 0)
        ncclSend(NULL, (size_t)atoi(argv[3]), ncclFloat32, 1, comm, NULL);
      else
        ncclRecv(NULL, (size_t)atoi(argv[3]), ncclFloat32, 0, comm, NULL);
    all_reduces(comm, 1);
  } else if (strcmp(what, "plant") == 0 || strcmp(what, "movedir") == 0) {
    plant_or_move(strcmp(what, "plant") == 0);
  } else {
    return cuda_scenario(what);
  }
  return 0;
}

int main(int argc, char **argv) {
  dup2(STDOUT_FILENO, STDERR_FILENO);
  setvbuf(stdout, NULL, _IONBF, 0); /* in order with ncclshim's stderr lines */
  const char *what = argc > 1 ? argv[1] : "basic";
  if (strcmp(what, "basic") == 0) {
    basic();
  } else if (strcmp(what, "ops") == 0 && argc == 4) {
    all_reduces(interposed_start(atoi(argv[2])), atoi(argv[3]));
  } else if (strcmp(what, "error") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduces(comm, 2);
    under_fail("ncclAllReduce", ncclInternalError);
    printf("error_result=%d\n", ncclAllReduce(NULL, NULL, 8, ncclInt32, ncclMax, comm, NULL));
  } else if (strcmp(what, "async") == 0) {
    ncclComm_t comm = interposed_start(1);
    all_reduces(comm, 1);
    under_set_async(ncclRemoteError);
    ncclResult_t seen = ncclSuccess;
    for (int i = 0; i < 3; i++) ncclCommGetAsyncError(comm, &seen);
    printf("async=%d\n", seen);
  } else if (strcmp(what, "signal") == 0) {
    all_reduces(interposed_start(0), 2);
    raise(SIGUSR1);
    printf("alive=1\n");
  } else if (strcmp(what, "split") == 0) {
    ncclComm_t comm = interposed_start(0), child = NULL;
    all_reduces(comm, 1);
    printf("split_result=%d\n", ncclCommSplit(comm, 7, 0, &child, NULL));
    all_reduces(child, 2);
  } else if (more(argc, argv) != 0) {
    fprintf(stderr, "usage: %s basic | ops RANK N | error | async | signal | split | ...\n",
            argv[0]);
    return 2;
  }
  return 0;
}
