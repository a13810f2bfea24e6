/* The flight recorder with communicators coming and going: COMMS communicators
 * created and destroyed in turn through the drop-in, CALLS all-reduces on each, NCCL being
 * bench/noop_nccl.c (NCCLSHIM_NCCL_LIBRARY). Run with NCCLSHIM_RECORD unset (off) and set
 * (on): the difference is the recorder's cost per call while its table churns. With the
 * recorder on and NCCLSHIM_RECORD_SIGNAL=USR1, the program then dumps and checks the dump:
 * the last communicator and the 64 before it, each with its id and sequence, none without.
 *   recorder_comms COMMS CALLS   prints CSV: recorder,comms,calls,ns_per_call,ns_per_comm
 * and, on, a line "ids: ..." (exit 1 when an id or a sequence is lost). */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ncclshim/ncclshim.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int count(const char *text, const char *a, const char *b) {
  int n = 0;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t length = end ? (size_t)(end - line) : strlen(line);
    const char *x = strstr(line, a), *y = b ? strstr(line, b) : line;
    n += x && x < line + length && y && y < line + length;
    line = end ? end + 1 : NULL;
  }
  return n;
}

/* The dump in NCCLSHIM_RECORD_DIR: 65 communicators (the live one, the last 64 ended), each
 * with an id and `calls` operations. */
static int check_dump(long calls) {
  const char *dir = getenv("NCCLSHIM_RECORD_DIR");
  DIR *d = opendir(dir ? dir : ".");
  if (d == NULL) return 1;
  static char text[1 << 20];
  size_t used = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "ncclshim-record-", 16) != 0) continue;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    used += fread(text + used, 1, sizeof(text) - 1 - used, f);
    fclose(f);
  }
  closedir(d);
  text[used] = '\0';
  char seq[48];
  snprintf(seq, sizeof(seq), "\"last_seq\":%ld,", calls);
  int comms = count(text, "\"kind\":\"comm\"", NULL);
  int with_id = count(text, "\"kind\":\"comm\"", "\"comm_id\":\"");
  int with_seq = count(text, "\"kind\":\"comm\"", seq);
  int ended = count(text, "\"kind\":\"comm\"", "\"ended_by\":\"ncclCommDestroy\"");
  printf("ids: %d communicators in the dump, %d with an id, %d with seq %ld, %d ended\n", comms,
         with_id, with_seq, calls, ended);
  return comms == 65 && with_id == 65 && with_seq == 65 && ended == 64 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s COMMS CALLS\n", argv[0]);
    return 2;
  }
  long comms = atol(argv[1]), calls = atol(argv[2]);
  int on = getenv("NCCLSHIM_RECORD") != NULL;
  if (ncclGroupStart() != ncclSuccess) { /* the first call loads */
    fprintf(stderr, "no NCCL: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  double in_calls = 0, t0 = now_ns();
  for (long i = 0; i < comms; i++) {
    /* The no-op NCCL writes no communicator: the one set here stays. */
    ncclComm_t comm = (ncclComm_t)(uintptr_t)(0x100000 + 64 * (uint64_t)i);
    memcpy(id.internal, &i, sizeof(i));
    ncclCommInitRank(&comm, 2, id, 0);
    double c0 = now_ns();
    for (long k = 0; k < calls; k++)
      ncclAllReduce(NULL, NULL, 1024, ncclFloat32, ncclSum, comm, NULL);
    in_calls += now_ns() - c0;
    if (i + 1 < comms) ncclCommDestroy(comm);
  }
  double total = now_ns() - t0;
  printf("%s,%ld,%ld,%.3f,%.1f\n", on ? "on" : "off", comms, calls,
         in_calls / (double)(comms * calls), (total - in_calls) / (double)comms);
  if (!on || getenv("NCCLSHIM_RECORD_SIGNAL") == NULL) return 0;
  raise(SIGUSR1);
  return check_dump(calls);
}
