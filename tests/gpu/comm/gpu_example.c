/* The multi-GPU example, run the ways users run it:
 *   gpu_example EXAMPLE fork [ARGS...]   started alone: it forks one rank per visible GPU
 *   gpu_example EXAMPLE launcher         two processes started independently, as a launcher
 *                                        would, meeting at NCCL_COMM_ID=127.0.0.1:<port>
 * Each run must end within its limit, exit 0 and report its results as checked. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_common.h"

extern char **environ;

enum { LIMIT_MS = 120000, OUTPUT = 1 << 16 };

typedef struct run {
  pid_t pid;
  FILE *output; /* what it printed, read after it ended */
} run;

/* The environment without any launcher's variables, plus `extra` (NULL-terminated). */
static char **environment(const char *const *extra) {
  static const char *const dropped[] = {
      "RANK=",     "WORLD_SIZE=", "LOCAL_RANK=",      "OMPI_COMM_WORLD_", "SLURM_",
      "PMI_RANK=", "PMI_SIZE=",   "MPI_LOCALRANKID=", "NCCL_COMM_ID=",    NULL};
  size_t n = 0, e = 0;
  while (environ[n]) n++;
  while (extra && extra[e]) e++;
  char **env = calloc(n + e + 1, sizeof(char *));
  size_t used = 0;
  for (size_t i = 0; env && i < n; i++) {
    int drop = 0;
    for (int d = 0; dropped[d]; d++)
      drop |= strncmp(environ[i], dropped[d], strlen(dropped[d])) == 0;
    if (!drop) env[used++] = environ[i];
  }
  for (size_t i = 0; env && i < e; i++) env[used++] = (char *)extra[i];
  return env;
}

static int start(run *r, const char *example, char *const *argv, const char *const *extra) {
  r->output = tmpfile();
  char **env = environment(extra);
  if (r->output == NULL || env == NULL) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fileno(r->output), STDOUT_FILENO);
  int rc = posix_spawn(&r->pid, example, &actions, NULL, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  free(env);
  return rc == 0 ? 0 : -1;
}

/* Wait for it (bounded), print what it said; 1 when it exited 0 and said `needle`. */
static int finish(run *r, const char *what, const char *needle) {
  int rc = gpu_wait_child(r->pid, LIMIT_MS, what);
  static char text[OUTPUT];
  rewind(r->output);
  size_t n = fread(text, 1, sizeof(text) - 1, r->output);
  text[n] = '\0';
  fclose(r->output);
  printf("---- %s (exit %d)\n%s", what, rc, text);
  if (rc != 0)
    printf("FAIL: %s exited with %d\n", what, rc);
  else if (strstr(text, needle) == NULL)
    printf("FAIL: %s did not say \"%s\"\n", what, needle);
  return rc == 0 && strstr(text, needle) != NULL;
}

static int fork_mode(const char *example, int gpus, int argc, char **argv) {
  char *args[32] = {(char *)example};
  int n = 1;
  for (int i = 0; i < argc && n < 31; i++) args[n++] = argv[i];
  run r;
  if (start(&r, example, args, NULL) != 0) return GPU_FAIL;
  char needle[64];
  snprintf(needle, sizeof(needle), "all %d rank(s) passed", gpus);
  return finish(&r, "the example, forking", needle) ? GPU_PASS : GPU_FAIL;
}

static int launcher_mode(const char *example) {
  int port = gpu_free_port();
  if (port < 0) return GPU_FAIL;
  char comm_id[64];
  snprintf(comm_id, sizeof(comm_id), "NCCL_COMM_ID=127.0.0.1:%d", port);
  char *args[] = {(char *)example, "--count", "262144", "--iters", "5",
                  "--timeout-ms",  "30000",   NULL};
  run ranks[2];
  for (int i = 0; i < 2; i++) {
    const char *rank = i == 0 ? "RANK=0" : "RANK=1";
    const char *local = i == 0 ? "LOCAL_RANK=0" : "LOCAL_RANK=1";
    const char *extra[] = {rank, "WORLD_SIZE=2", local, comm_id, NULL};
    if (start(&ranks[i], example, args, extra) != 0) return GPU_FAIL;
  }
  int ok = finish(&ranks[0], "rank 0", "rank 0/2 (GPU 0)");
  ok &= finish(&ranks[1], "rank 1", "rank 1/2 (GPU 1)");
  return ok ? GPU_PASS : GPU_FAIL;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[2], "fork") != 0 && strcmp(argv[2], "launcher") != 0)) {
    fprintf(stderr, "usage: %s EXAMPLE fork [ARGS...] | EXAMPLE launcher\n", argv[0]);
    return GPU_FAIL;
  }
  int launcher = strcmp(argv[2], "launcher") == 0;
  int gpus = gpu_require(launcher ? 2 : 1);
  fflush(NULL);
  return launcher ? launcher_mode(argv[1]) : fork_mode(argv[1], gpus, argc - 3, argv + 3);
}
