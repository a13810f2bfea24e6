/* A one-rank NCCL job for the hang dump on one GPU (tests/gpu/dropin/hangdump.sh), written against
 * NCCL's names and linked to an NCCL (the drop-in goes over it with LD_PRELOAD) or to the
 * drop-in; its CUDA work is libhang_gpu.so's (hang_gpu.cu).
 *   hang_job hang DIR      two all-reduces that complete, then a kernel that holds the
 *                          stream (it gives up by itself after 4 s) and a third all-reduce
 *                          behind it; waits (at most 4 s) for the recorder's dump to appear in
 *                          DIR, releases the kernel and finishes
 *   hang_job capture DIR   one all-reduce, then one captured into a CUDA graph (global mode)
 *                          and replayed three times, then one more
 * Prints key=value lines: detected_ms (-1: no dump), gave_up, capture_result, results. Exit
 * status 0, 77 without a GPU, 1 when a call failed. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "has_dump.h"
#include "ncclshim/ncclshim.h" /* stands in for nccl.h: NCCL's names and types */

int hd_init(void);
void *hd_stream(void);
void *hd_send(void);
void *hd_recv(void);
unsigned long hd_count(void);
int hd_hold(int limit_ms);
void hd_release(void);
int hd_gave_up(void);
int hd_sync(void);
int hd_capture_begin(void);
int hd_capture_replay(int n);

static int failures;

static void check(const char *what, int result) {
  if (result != 0) {
    printf("failed=%s:%d\n", what, result);
    failures++;
  }
}

static void all_reduce(ncclComm_t comm) {
  check("ncclAllReduce", ncclAllReduce(hd_send(), hd_recv(), hd_count(), ncclFloat32, ncclSum, comm,
                                       (cudaStream_t)hd_stream()));
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Milliseconds from `start` until a dump is in `dir`, checked every 5 ms; -1 after 4 s. */
static double wait_for_dump(const char *dir, double start) {
  struct timespec tick = {0, 5 * 1000 * 1000};
  while (now_ms() - start < 4000) {
    if (has_dump(dir)) return now_ms() - start;
    nanosleep(&tick, NULL);
  }
  return -1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc != 3 || (strcmp(argv[1], "hang") != 0 && strcmp(argv[1], "capture") != 0)) {
    fprintf(stderr, "usage: %s hang|capture DIR\n", argv[0]);
    return 2;
  }
  int status = hd_init();
  if (status == 77) return 77;
  check("hd_init", status);
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  check("ncclGetUniqueId", ncclGetUniqueId(&id));
  check("ncclCommInitRank", ncclCommInitRank(&comm, 1, id, 0));
  if (failures) return 1;
  all_reduce(comm);
  if (strcmp(argv[1], "hang") == 0) {
    all_reduce(comm);
    check("sync", hd_sync());
    check("hd_hold", hd_hold(4000));
    double start = now_ms();
    all_reduce(comm); /* seq 3, behind the held kernel */
    printf("detected_ms=%.0f\n", wait_for_dump(argv[2], start));
    hd_release();
    check("sync", hd_sync());
    printf("gave_up=%d\n", hd_gave_up());
  } else {
    check("sync", hd_sync());
    check("hd_capture_begin", hd_capture_begin());
    all_reduce(comm); /* captured: seq 2 */
    int replay = hd_capture_replay(3);
    printf("capture_result=%d\n", replay);
    check("capture", replay);
    all_reduce(comm);
    check("sync", hd_sync());
  }
  check("ncclCommDestroy", ncclCommDestroy(comm));
  printf("failures=%d\n", failures);
  return failures ? 1 : 0;
}
