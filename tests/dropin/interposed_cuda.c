/* The interposed program's scenarios with a (fake) CUDA driver, loaded as a CUDA program
 * loads it: dlopen of $FAKE_CUDA (tests/dropin/fake_cuda_events.c) before NCCL is used.
 *   interposed captured    two all-reduces on a capturing stream, one on an idle one
 *   interposed hang        two all-reduces on an idle stream, one on a held one, then waits
 *                          (at most 20 s) for a dump to appear in $NCCLSHIM_RECORD_DIR
 *   interposed hanggroup   the same, the held all-reduce inside ncclGroupStart/End
 *   interposed heldburst   1000 all-reduces on a held stream, then waits for a dump
 *   interposed alternate   200 all-reduces taking turns on two held streams, then waits
 *   interposed lateheld    50 all-reduces on a stream whose first event completes, no later
 *                          one, then waits
 *   interposed idleburst   200 all-reduces on an idle stream
 *   interposed forkhang    an all-reduce (the hang thread starts), then a forked child's on
 *                          the same stream, which holds it (FAKE_LATE_STREAM) while the
 *                          parent's event is still queued: the child's own thread must dump;
 *                          prints child_dumped=0|1
 * The all-reduces are bound by dlsym, so that audit mode (LD_AUDIT) sees them as well.
 * It prints events_recorded=N (cuEventRecord calls) and, for the hang ones, dumped=0|1 and
 * capture_mode=M (the mode the hang thread set: 1, thread-local). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda_events.h"
#include "has_dump.h"
#include "interposed.h"
#include "under.h"

static void *cuda;

/* One of the fake's counters (fake_cuda_events.c), or -2 when it has none of that name. */
static int fake_says(const char *name) {
  int (*count)(void) = (int (*)(void))(uintptr_t)dlsym(cuda, name);
  return count != NULL ? count() : -2;
}

/* The condition (a dump in the directory), checked every 10 ms for at most 20 s. */
static int wait_for_dump(void) {
  const char *dir = getenv("NCCLSHIM_RECORD_DIR");
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 2000; i++) {
    if (dir != NULL && has_dump(dir)) return 1;
    nanosleep(&tick, NULL);
  }
  return 0;
}

/* Bound by dlsym, as ctypes binds it: audit mode sees every such binding. */
static ncclResult_t all_reduce_on(ncclComm_t comm, uintptr_t stream) {
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) =
      (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                       cudaStream_t))(uintptr_t)dlsym(RTLD_DEFAULT, "ncclAllReduce");
  return all_reduce(NULL, NULL, 256, ncclFloat32, ncclSum, comm, (cudaStream_t)stream);
}

int cuda_scenario(const char *what) {
  cuda = dlopen(getenv("FAKE_CUDA"), RTLD_NOW | RTLD_GLOBAL);
  if (cuda == NULL) {
    printf("no_fake_cuda=%s\n", dlerror());
    return 0;
  }
  if (strcmp(what, "captured") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, FAKE_CAPTURING_STREAM);
    all_reduce_on(comm, FAKE_CAPTURING_STREAM);
    all_reduce_on(comm, 0x5);
  } else if (strcmp(what, "hang") == 0 || strcmp(what, "hanggroup") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, 0x5);
    all_reduce_on(comm, 0x5);
    int grouped = strcmp(what, "hanggroup") == 0;
    if (grouped) ncclGroupStart();
    all_reduce_on(comm, FAKE_HELD_STREAM);
    if (grouped) ncclGroupEnd();
    printf("dumped=%d\n", wait_for_dump());
    printf("capture_mode=%d\n", fake_says("fake_cuda_events_capture_mode"));
  } else if (strcmp(what, "heldburst") == 0 || strcmp(what, "alternate") == 0 ||
             strcmp(what, "lateheld") == 0) {
    ncclComm_t comm = interposed_start(0);
    int n = what[0] == 'h' ? 1000 : what[0] == 'a' ? 200 : 50;
    for (int i = 0; i < n; i++)
      all_reduce_on(comm, what[0] == 'l'            ? FAKE_LATE_STREAM
                          : what[0] == 'a' && i % 2 ? FAKE_HELD_STREAM_2
                                                    : FAKE_HELD_STREAM);
    printf("dumped=%d\n", wait_for_dump());
  } else if (strcmp(what, "forkhang") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, FAKE_LATE_STREAM);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      all_reduce_on(comm, FAKE_LATE_STREAM);
      _exit(wait_for_dump() ? 0 : 1);
    }
    int status = 0;
    printf("child_dumped=%d\n", child > 0 && waitpid(child, &status, 0) == child &&
                                    WIFEXITED(status) && WEXITSTATUS(status) == 0);
  } else if (strcmp(what, "idleburst") == 0) {
    ncclComm_t comm = interposed_start(0);
    for (int i = 0; i < 200; i++) all_reduce_on(comm, 0x5);
  } else {
    return 1;
  }
  printf("events_recorded=%d\n", fake_says("fake_cuda_events_recorded"));
  return 0;
}
