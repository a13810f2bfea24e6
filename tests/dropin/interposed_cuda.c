/* The interposed program's scenarios with a (fake) CUDA driver, loaded as a CUDA program
 * loads it: dlopen of $FAKE_CUDA (tests/fakes/fake_cuda.h) before NCCL is used, device 0's
 * context made current as cudaSetDevice does, and streams made in it:
 *   capturing  capturing into a graph (thread-local mode)
 *   idle       its events complete at once
 *   held, held2  their events never complete
 *   late       its first event completes, no later one
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
 *                          the same stream (the late stream) while the parent's event is
 *                          still queued; prints child_dumped=0|1 (the driver refuses CUDA in
 *                          the child, as the real one does after cuInit)
 * The all-reduces are bound by dlsym, so that audit mode (LD_AUDIT) sees them as well.
 * It prints events_recorded=N (cuEventRecord calls) and, for the hang ones, dumped=0|1 and
 * capture_mode=M (the mode last set, by the hang thread: 1, thread-local). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "has_dump.h"
#include "interposed.h"
#include "under.h"

static fake_cuda_api fake;
static struct { CUstream capturing, idle, held, held2, late; } streams;

/* The fake loaded and bound, device 0 current, the streams made: 0, or -1 (printed). */
static int fake_driver(void) {
  if (fake_cuda_bind(getenv("FAKE_CUDA"), &fake) != 0 || fake.use_device(0) != 0) {
    printf("no_fake_cuda=1\n");
    return -1;
  }
  streams.capturing = fake.new_stream(0);
  streams.idle = fake.new_stream(0);
  streams.held = fake.new_stream(0);
  streams.held2 = fake.new_stream(0);
  streams.late = fake.new_stream(0);
  fake.set_capture(streams.capturing, NCCLSHIM_CU_STREAM_CAPTURE_STATUS_ACTIVE,
                   NCCLSHIM_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  fake.set_stream_answer(streams.held, NCCLSHIM_CUDA_ERROR_NOT_READY, 0);
  fake.set_stream_answer(streams.held2, NCCLSHIM_CUDA_ERROR_NOT_READY, 0);
  fake.set_stream_answer(streams.late, NCCLSHIM_CUDA_ERROR_NOT_READY, 1);
  return 0;
}

/* The condition (a dump in the directory), checked every 10 ms for at most `ms`. */
static int wait_for_dump_ms(int ms) {
  const char *dir = getenv("NCCLSHIM_RECORD_DIR");
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < ms / 10; i++) {
    if (dir != NULL && has_dump(dir)) return 1;
    nanosleep(&tick, NULL);
  }
  return 0;
}

/* Bound by dlsym, as ctypes binds it: audit mode sees every such binding. */
static ncclResult_t all_reduce_on(ncclComm_t comm, CUstream stream) {
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t) =
      (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                       cudaStream_t))(uintptr_t)dlsym(RTLD_DEFAULT, "ncclAllReduce");
  return all_reduce(NULL, NULL, 256, ncclFloat32, ncclSum, comm, (cudaStream_t)stream);
}

int cuda_scenario(const char *what) {
  if (fake_driver() != 0) return 0;
  if (strcmp(what, "captured") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, streams.capturing);
    all_reduce_on(comm, streams.capturing);
    all_reduce_on(comm, streams.idle);
  } else if (strcmp(what, "hang") == 0 || strcmp(what, "hanggroup") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, streams.idle);
    all_reduce_on(comm, streams.idle);
    int grouped = strcmp(what, "hanggroup") == 0;
    if (grouped) ncclGroupStart();
    all_reduce_on(comm, streams.held);
    if (grouped) ncclGroupEnd();
    printf("dumped=%d\n", wait_for_dump_ms(20000));
    printf("capture_mode=%d\n", fake.counter(3));
  } else if (strcmp(what, "heldburst") == 0 || strcmp(what, "alternate") == 0 ||
             strcmp(what, "lateheld") == 0) {
    ncclComm_t comm = interposed_start(0);
    int n = what[0] == 'h' ? 1000 : what[0] == 'a' ? 200 : 50;
    for (int i = 0; i < n; i++)
      all_reduce_on(comm, what[0] == 'l'            ? streams.late
                          : what[0] == 'a' && i % 2 ? streams.held2
                                                    : streams.held);
    printf("dumped=%d\n", wait_for_dump_ms(20000));
  } else if (strcmp(what, "forkhang") == 0) {
    ncclComm_t comm = interposed_start(0);
    all_reduce_on(comm, streams.late);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      all_reduce_on(comm, streams.late);
      _exit(wait_for_dump_ms(1000) ? 0 : 1); /* 10 times its deadline */
    }
    int status = 0;
    printf("child_dumped=%d\n", child > 0 && waitpid(child, &status, 0) == child &&
                                    WIFEXITED(status) && WEXITSTATUS(status) == 0);
  } else if (strcmp(what, "idleburst") == 0) {
    ncclComm_t comm = interposed_start(0);
    for (int i = 0; i < 200; i++) all_reduce_on(comm, streams.idle);
  } else {
    return 1;
  }
  printf("events_recorded=%d\n", fake.count("cuEventRecord"));
  return 0;
}
