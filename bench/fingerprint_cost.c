/* The cost of ncclshim_nccl_fingerprint, which every rank of a job computes at start-up: the
 * first call on a freshly opened handle, in microseconds, and what it read from the file
 * system (rchar of /proc/self/io: bytes passed by read-like system calls) and how many page
 * faults it took (a file mapped and touched shows up there, not in rchar). The goal (issue
 * 18): at most 0.1 ms and no file read for a library with a GNU build-id. The content
 * fingerprint, which hashes the whole file, is measured the same way for comparison.
 *   fingerprint_cost LIBRARY [HANDLES]
 * Prints CSV: way,library,handle,us,bytes_read,minor_faults,major_faults */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long long bytes_read(void) {
  FILE *f = fopen("/proc/self/io", "r");
  char line[128];
  long long value = -1;
  while (f != NULL && fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "rchar: %lld", &value) == 1) break;
  if (f) fclose(f);
  return value;
}

typedef const char *(*fingerprint_fn)(ncclshim_nccl *, char *, size_t);

static void measure(const char *way, fingerprint_fn fn, const char *library, int handles) {
  for (int i = 0; i < handles; i++) {
    ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
    options.path = library;
    ncclshim_nccl *nccl = NULL;
    if (ncclshim_nccl_open(&options, &nccl) != NCCLSHIM_OK) {
      fprintf(stderr, "%s\n", ncclshim_nccl_message(nccl));
      exit(1);
    }
    char buf[128];
    struct rusage before, after;
    /* rchar is read before the clock starts and after it stops: its own read is not timed. */
    long long read_before = bytes_read();
    getrusage(RUSAGE_SELF, &before);
    double start = now_us();
    fn(nccl, buf, sizeof(buf));
    double took = now_us() - start;
    getrusage(RUSAGE_SELF, &after);
    long long read_after = bytes_read();
    /* Reading /proc/self/io itself counts in rchar once: subtract what one read of it costs. */
    long long probe_cost = bytes_read();
    probe_cost = bytes_read() - probe_cost;
    printf("%s,%s,%d,%.2f,%lld,%ld,%ld\n", way, library, i, took,
           read_after - read_before - probe_cost, after.ru_minflt - before.ru_minflt,
           after.ru_majflt - before.ru_majflt);
    if (i == 0) fprintf(stderr, "%s: %s\n", way, buf);
    ncclshim_nccl_close(nccl);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY [HANDLES]\n", argv[0]);
    return 2;
  }
  int handles = argc > 2 ? atoi(argv[2]) : 20;
  measure("build-id", ncclshim_nccl_fingerprint, argv[1], handles);
  measure("content", ncclshim_nccl_fingerprint_content, argv[1], handles < 3 ? handles : 3);
  return 0;
}
