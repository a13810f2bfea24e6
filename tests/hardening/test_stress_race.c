/* 64 threads racing the first use of the default table, in a fresh process each round
 * (forked before anything was loaded), 1,000 rounds: every thread gets the same table and
 * status, NCCL's version is asked exactly once, and a failed load is the same failure for
 * all. Rounds alternate a good NCCL and none. Then the drop-in's first call raced the same
 * way. STRESS_ROUNDS lowers the count (valgrind and qemu runs). Plain C, no cmocka: it is
 * built for the TSan job too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fail_line.h"
#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"
#include "support.h"

enum { THREADS = 64, DEFAULT_ROUNDS = 1000 };

/* NCCL's own name, exported by the drop-in this program links. */
ncclResult_t ncclGetVersion(int *version);

static pthread_barrier_t start;

typedef struct seen {
  const ncclshim_nccl_table *table;
  ncclshim_status status;
  int version;
  int dropin_result, dropin_version;
} seen;

static void *race_default(void *out) {
  seen *s = out;
  pthread_barrier_wait(&start);
  s->table = ncclshim_table();
  s->status = ncclshim_init();
  s->version = ncclshim_version();
  return NULL;
}

static void *race_dropin(void *out) {
  seen *s = out;
  pthread_barrier_wait(&start);
  s->dropin_version = -1;
  s->dropin_result = ncclGetVersion(&s->dropin_version);
  return NULL;
}

#define REQUIRE(cond, ...) CHECK_OR(return 1, "round", round, cond, __VA_ARGS__)

/* One round, in the forked child. */
static int child_round(int round, int dropin, int good) {
  char *fake = fake_path("2.28.9");
  setenv("NCCLSHIM_NCCL_LIBRARY", good ? fake : "/nonexistent/libnccl.so.2", 1);
  pthread_t threads[THREADS];
  seen s[THREADS];
  memset(s, 0, sizeof(s));
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++)
    REQUIRE(pthread_create(&threads[i], NULL, dropin ? race_dropin : race_default, &s[i]) == 0,
            "pthread_create failed");
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  pthread_barrier_destroy(&start);

  if (dropin) {
    for (int i = 0; i < THREADS; i++) {
      REQUIRE(s[i].dropin_result == (good ? ncclSuccess : ncclSystemError),
              "thread %d: drop-in result %d", i, s[i].dropin_result);
      REQUIRE(s[i].dropin_version == (good ? 22809 : -1), "thread %d: version %d", i,
              s[i].dropin_version);
    }
  } else {
    for (int i = 0; i < THREADS; i++) {
      REQUIRE(s[i].table != NULL && s[i].table == s[0].table, "thread %d: another table", i);
      REQUIRE(s[i].status == (good ? NCCLSHIM_OK : NCCLSHIM_NOT_FOUND), "thread %d: status %s", i,
              ncclshim_status_name(s[i].status));
      REQUIRE(s[i].version == (good ? 22809 : 0), "thread %d: version %d", i, s[i].version);
    }
    REQUIRE(s[0].table == ncclshim_nccl_functions(ncclshim_nccl_default()), "not the default's");
  }
  REQUIRE(ncclshim_nccl_attempt_count(ncclshim_nccl_default()) == 1, "more than one attempt");
  if (good) {
    /* Loaded once per loader: the version asked once by libncclshim's (plus, with the drop-in,
     * once by its own compiled-in loader and once per drop-in call). */
    int calls = fake_version_calls(fake);
    REQUIRE(calls == (dropin ? 2 + THREADS : 1), "ncclGetVersion called %d times", calls);
  } else {
    int r = ncclshim_table()->ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL, NULL);
    REQUIRE(r == ncclInvalidUsage, "absent table answered %d", r);
  }
  return 0;
}

static int run_rounds(const char *what, int rounds, int dropin) {
  int failed = 0;
  for (int round = 0; round < rounds && failed < 5; round++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return rounds;
    }
    if (pid == 0) _exit(child_round(round, dropin, round % 2 == 0));
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "%s: round %d failed (status 0x%x)\n", what, round, status);
      failed++;
    }
  }
  printf("%s: %d threads x %d rounds (fresh process each, good NCCL and none alternating): %s\n",
         what, THREADS, rounds, failed ? "FAILED" : "ok");
  return failed;
}

int main(void) {
  const char *env = getenv("STRESS_ROUNDS");
  int rounds = env && atoi(env) > 0 ? atoi(env) : DEFAULT_ROUNDS;
  int failed = run_rounds("default table", rounds, 0);
  failed += run_rounds("drop-in first call", rounds / 4 > 0 ? rounds / 4 : 1, 1);
  return failed ? 1 : 0;
}
