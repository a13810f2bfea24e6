/* 10,000 open/close cycles of explicit handles, measured: heap in use, resident memory and
 * open file descriptors before and after must not grow (a fixed slack, far below one byte per
 * cycle for the heap). Each cycle opens a good NCCL (and reads its build tag and, every 100th
 * cycle, its fingerprint from the build-id and the one that hashes the whole file), a library
 * refused after dlopen (loaded and unloaded each time), a missing file, and a good CUDA driver, and
 * closes them all. STRESS_CYCLES lowers the count (valgrind and qemu runs); STRESS_RSS=off drops
 * the resident memory check where the process's RSS is mostly a tool's own (valgrind, qemu, ASan's
 * quarantine), whose leak checks or allocator statistics stand in. Plain C, no cmocka. */
#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclshim/cuda.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"
#include "support.h"

enum { DEFAULT_CYCLES = 10000, WARM_UP = 200 };
/* Allowed growth over the whole run: allocator and page-cache noise, not a leak. 64 KiB of
 * heap over 10,000 cycles is under 7 bytes a cycle: one lost malloc a cycle (32 bytes at
 * least) is over four times that. */
#define HEAP_SLACK (64 * 1024)
#define RSS_SLACK (2 * 1024 * 1024)

/* The sanitizers' allocator, where one is linked in (mallinfo2 does not see it). */
size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

typedef struct sample {
  long long heap; /* bytes in use, or -1 when no allocator statistics are available */
  long long rss;  /* bytes */
  int fds;
} sample;

static const char *heap_source(void) {
  if (__sanitizer_get_current_allocated_bytes) return "sanitizer allocator";
  return "mallinfo2";
}

static sample measure(void) {
  sample s = {-1, -1, 0};
  if (__sanitizer_get_current_allocated_bytes) {
    s.heap = (long long)__sanitizer_get_current_allocated_bytes();
  } else {
    struct mallinfo2 m = mallinfo2();
    s.heap = (long long)(m.uordblks + m.hblkhd);
  }
  FILE *f = fopen("/proc/self/statm", "r");
  long pages_total, pages_resident;
  if (f != NULL && fscanf(f, "%ld %ld", &pages_total, &pages_resident) == 2)
    s.rss = (long long)pages_resident * sysconf(_SC_PAGESIZE);
  if (f) fclose(f);
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') s.fds++;
  if (d) closedir(d);
  s.fds--; /* the one opendir holds */
  return s;
}

static int failures;

static void expect(int ok, const char *what, int cycle) {
  if (!ok && failures++ < 5) fprintf(stderr, "cycle %d: %s\n", cycle, what);
}

static void one_cycle(int cycle, const char *good, const char *refused, const char *absent,
                      const char *cuda_path) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  ncclshim_nccl *nccl = NULL;
  options.path = good;
  expect(ncclshim_nccl_open(&options, &nccl) == NCCLSHIM_OK, "good NCCL refused", cycle);
  expect(ncclshim_nccl_build(nccl) != NULL, "no build tag", cycle);
  if (cycle % 100 == 0) {
    char fingerprint[128];
    ncclshim_nccl_fingerprint(nccl, fingerprint, sizeof(fingerprint));
    expect(strncmp(fingerprint, "nccl2.28.9-b", 12) == 0, "odd fingerprint", cycle);
    ncclshim_nccl_fingerprint_content(nccl, fingerprint, sizeof(fingerprint));
    expect(strncmp(fingerprint, "nccl2.28.9-f", 12) == 0, "odd content fingerprint", cycle);
  }
  ncclshim_nccl_close(nccl);

  options.path = refused;
  expect(ncclshim_nccl_open(&options, &nccl) == NCCLSHIM_MISSING_SYMBOLS, "refusal changed", cycle);
  ncclshim_nccl_close(nccl);

  options.path = absent;
  expect(ncclshim_nccl_open(&options, &nccl) == NCCLSHIM_NOT_FOUND, "absent file found", cycle);
  ncclshim_nccl_close(nccl);

  ncclshim_cuda_options cuda_options = NCCLSHIM_CUDA_OPTIONS_INIT;
  cuda_options.path = cuda_path;
  ncclshim_cuda *cuda = NULL;
  expect(ncclshim_cuda_open(&cuda_options, &cuda) == NCCLSHIM_OK, "good driver refused", cycle);
  ncclshim_cuda_close(cuda);
}

int main(void) {
  const char *env = getenv("STRESS_CYCLES");
  int cycles = env && atoi(env) > 0 ? atoi(env) : DEFAULT_CYCLES;
  char *good = fake_path("2.28.9"), *refused = fake_path("missing-required");
  char *absent = fake_path("absent-for-stress");
  const char *cuda_path = getenv("CUDA_FAKE");
  if (cuda_path == NULL) {
    fprintf(stderr, "CUDA_FAKE is not set\n");
    return 99;
  }

  for (int i = 0; i < WARM_UP; i++) one_cycle(-1 - i, good, refused, absent, cuda_path);
  sample before = measure();
  for (int i = 0; i < cycles; i++) one_cycle(i, good, refused, absent, cuda_path);
  sample after = measure();

  long long heap_growth = after.heap - before.heap, rss_growth = after.rss - before.rss;
  printf("open/close cycles: %d (after %d warm-up), 4 opens and closes each\n", cycles, WARM_UP);
  printf("heap in use (%s): %lld -> %lld bytes (%+lld, %.3f bytes/cycle)\n", heap_source(),
         before.heap, after.heap, heap_growth, (double)heap_growth / cycles);
  printf("resident memory: %lld -> %lld KiB (%+lld KiB)\n", before.rss / 1024, after.rss / 1024,
         rss_growth / 1024);
  printf("open file descriptors: %d -> %d\n", before.fds, after.fds);
  expect(after.fds == before.fds, "file descriptors grew", cycles);
  /* The slack scales down with fewer cycles, never below 16 KiB. */
  long long heap_slack = HEAP_SLACK * (long long)cycles / DEFAULT_CYCLES;
  if (heap_slack < 16 * 1024) heap_slack = 16 * 1024;
  expect(heap_growth <= heap_slack, "the heap grew", cycles);
  const char *rss_env = getenv("STRESS_RSS");
  if (rss_env != NULL && strcmp(rss_env, "off") == 0)
    printf("resident memory not checked here (STRESS_RSS=off: a tool's own memory)\n");
  else
    expect(rss_growth <= RSS_SLACK, "resident memory grew", cycles);
  printf("%s\n", failures ? "FAIL" : "no growth");
  return failures ? 1 : 0;
}
