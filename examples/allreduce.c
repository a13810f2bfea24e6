/* ncclshim's multi-GPU example: all-reduce and broadcast of float32 between processes, one
 * per GPU, through whatever NCCL and CUDA driver the machine has, checked on the host, timed.
 *
 *   ncclshim-allreduce [--count N] [--iters N] [--timeout-ms N] [--nonblocking|--blocking]
 *                      [--ranks N]
 *
 * By default the communicator is NCCLSHIM_COMM_SPLIT_BLOCKING and watched by ncclshim's
 * watchdog: init bounded by the timeout, collectives at the cost of a blocking call, a hang
 * found by the watchdog within the timeout (docs/collectives.md, "Which mode to use").
 * --nonblocking: a non-blocking communicator and a bounded wait per collective instead;
 * --blocking: a plain blocking one.
 *
 * Started alone it forks one worker per visible GPU (or --ranks of them) before any CUDA
 * call and hands them NCCL's unique id through pipes. Started by a launcher it is one rank
 * of a job: rank, world size and local rank come from RANK/WORLD_SIZE/LOCAL_RANK (torchrun,
 * or set by hand), OMPI_COMM_WORLD_RANK/_SIZE/_LOCAL_RANK (mpirun) or SLURM_PROCID/
 * SLURM_NTASKS/SLURM_LOCALID (srun), and the ranks meet through NCCL's own rendezvous at
 * NCCL_COMM_ID=<host of rank 0>:<port>, which must then be set on every rank. Without NCCL
 * or without a GPU it says so and exits 0. Exit codes: 0 passed (or nothing to do),
 * 1 a rank failed, 2 wrong usage. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allreduce.h"

enum { EXIT_USAGE = 2, MAX_RANKS = 1024 };

typedef struct launcher {
  const char *name; /* NULL: started alone */
  int rank, size, local_rank;
} launcher;

/* The integer in `name`, or -1 when it is unset or not a number >= 0. */
static int env_int(const char *name) {
  const char *text = getenv(name);
  if (text == NULL || *text == '\0') return -1;
  char *end;
  long value = strtol(text, &end, 10);
  return *end == '\0' && value >= 0 && value <= 1 << 30 ? (int)value : -1;
}

/* The first launcher whose rank and size variables are both set. srun also sets SLURM_PROCID
 * in a batch script's own shell; SLURM_STEP_ID marks a task that srun started. */
static launcher find_launcher(void) {
  static const struct {
    const char *name, *rank, *size, *local, *marker;
  } known[] = {
      {"torchrun or RANK/WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK", NULL},
      {"mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       "OMPI_COMM_WORLD_LOCAL_RANK", NULL},
      {"srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_ID"},
      {"mpirun (MPICH, Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", NULL},
  };
  launcher l = {NULL, -1, -1, -1};
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    int rank = env_int(known[i].rank), size = env_int(known[i].size);
    if (rank < 0 || size < 1 || (known[i].marker && getenv(known[i].marker) == NULL)) continue;
    l.name = known[i].name;
    l.rank = rank;
    l.size = size;
    l.local_rank = env_int(known[i].local);
    return l;
  }
  return l;
}

static int usage(const char *message) {
  fprintf(stderr,
          "ncclshim example: %s\n"
          "usage: ncclshim-allreduce [--count FLOATS] [--iters N] [--timeout-ms MS] "
          "[--nonblocking|--blocking] [--ranks N]\n",
          message);
  return EXIT_USAGE;
}

/* Options into *job and *ranks; 0, or usage()'s code. */
static int parse(int argc, char **argv, job *job, int *ranks) {
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--blocking") == 0 || strcmp(arg, "--nonblocking") == 0) {
      job->mode = arg[2] == 'b' ? MODE_BLOCKING : MODE_NONBLOCKING;
      continue;
    }
    if (i + 1 >= argc) return usage("an option is missing its value");
    long value = strtol(argv[++i], NULL, 10);
    if (value < 1 || value > 1L << 30) return usage("option values are whole numbers >= 1");
    if (strcmp(arg, "--count") == 0)
      job->count = (size_t)value;
    else if (strcmp(arg, "--iters") == 0)
      job->iters = (int)value;
    else if (strcmp(arg, "--timeout-ms") == 0)
      job->timeout_ms = (int)value;
    else if (strcmp(arg, "--ranks") == 0)
      *ranks = (int)value;
    else
      return usage("unknown option");
  }
  return 0;
}

/* One rank of a job some launcher started: the id comes from NCCL_COMM_ID. */
static int launched(ncclshim_nccl *nccl, const launcher *l, job *job) {
  if (getenv("NCCL_COMM_ID") == NULL) {
    fprintf(stderr,
            "ncclshim example: started by %s as rank %d of %d, but NCCL_COMM_ID is not set: "
            "export NCCL_COMM_ID=<host of rank 0>:<free port> on every rank\n",
            l->name, l->rank, l->size);
    return EXIT_USAGE;
  }
  if (l->rank >= l->size) return usage("the launcher's rank is not below its world size");
  job->rank = l->rank;
  job->nranks = l->size;
  job->local_rank = l->local_rank >= 0 ? l->local_rank : 0;
  if (ncclshim_nccl_check(nccl, ncclshim_nccl_functions(nccl)->ncclGetUniqueId(&job->id),
                          "ncclGetUniqueId") != NCCLSHIM_OK) {
    fprintf(stderr, "ncclshim example: %s\n", ncclshim_last_error());
    return RANK_FAILED;
  }
  printf("ncclshim example: rank %d of %d (local %d), started by %s, rendezvous at %s\n", job->rank,
         job->nranks, job->local_rank, l->name, getenv("NCCL_COMM_ID"));
  int rc = run_rank(nccl, job);
  if (rc == RANK_NO_GPU) printf("ncclshim example: no GPU: nothing to do\n");
  return rc == RANK_NO_GPU ? 0 : rc;
}

/* All `size` bytes through a pipe end: written when `sending`, else read; -1 on an error or
 * an early end. */
static int transfer_all(int fd, void *data, size_t size, int sending) {
  for (size_t done = 0; done < size;) {
    char *at = (char *)data + done;
    ssize_t n = sending ? write(fd, at, size - done) : read(fd, at, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

/* A forked worker: wait for the unique id, then be rank `rank`. */
static void worker(ncclshim_nccl *nccl, job *job, int rank, int fd) {
  job->rank = job->local_rank = rank;
  int rc = RANK_FAILED;
  if (transfer_all(fd, &job->id, sizeof(job->id), 0) == 0)
    rc = run_rank(nccl, job);
  else
    fprintf(stderr, "rank %d: no unique id came from the parent\n", rank);
  close(fd);
  exit(rc);
}

/* Started alone: one worker per GPU, forked before any CUDA call in this process. */
static int forked(ncclshim_nccl *nccl, job *job, int ranks) {
  char why[512];
  int gpus = count_gpus(why, sizeof(why));
  if (gpus < 1) {
    printf("ncclshim example: no GPU (%s): nothing to do\n", why);
    return 0;
  }
  job->nranks = ranks > 0 && ranks < gpus ? ranks : gpus;
  if (job->nranks > MAX_RANKS) job->nranks = MAX_RANKS;
  printf("ncclshim example: %d GPU(s), forking %d rank(s)\n", gpus, job->nranks);
  fflush(NULL);
  pid_t pids[MAX_RANKS];
  int fds[MAX_RANKS], started = 0;
  for (; started < job->nranks; started++) {
    int p[2];
    if (pipe(p) != 0) break;
    pid_t pid = fork();
    if (pid == 0) {
      close(p[1]);
      for (int r = 0; r < started; r++) close(fds[r]);
      worker(nccl, job, started, p[0]);
    }
    close(p[0]);
    if (pid < 0) {
      close(p[1]);
      break;
    }
    pids[started] = pid;
    fds[started] = p[1];
  }
  /* The id is made only now, after the fork: its bootstrap root thread lives here. */
  ncclUniqueId id;
  int ok = started == job->nranks &&
           ncclshim_nccl_check(nccl, ncclshim_nccl_functions(nccl)->ncclGetUniqueId(&id),
                               "ncclGetUniqueId") == NCCLSHIM_OK;
  if (started < job->nranks)
    fprintf(stderr, "ncclshim example: fork: %s\n", strerror(errno));
  else if (!ok)
    fprintf(stderr, "ncclshim example: %s\n", ncclshim_last_error());
  for (int r = 0; r < started; r++) {
    if (ok && transfer_all(fds[r], &id, sizeof(id), 1) != 0) ok = 0;
    close(fds[r]); /* without the id a worker reads EOF and gives up */
  }
  int passed = 0;
  for (int r = 0; r < started; r++) {
    int status;
    while (waitpid(pids[r], &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == RANK_PASSED)
      passed++;
    else if (WIFSIGNALED(status))
      fprintf(stderr, "ncclshim example: rank %d died of signal %d\n", r, WTERMSIG(status));
  }
  if (passed == job->nranks) {
    printf("ncclshim example: all %d rank(s) passed\n", passed);
    return 0;
  }
  printf("ncclshim example: %d of %d rank(s) failed\n", job->nranks - passed, job->nranks);
  return RANK_FAILED;
}

int main(int argc, char **argv) {
  job job = {.count = 1 << 20, .iters = 20, .timeout_ms = 60000};
  int ranks = 0;
  int rc = parse(argc, argv, &job, &ranks);
  if (rc != 0) return rc;
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK) {
    printf("ncclshim example: no NCCL (%s): nothing to do\n", ncclshim_nccl_message(nccl));
    return 0;
  }
  /* The fastest mode this NCCL allows that still finds hangs. */
  if (job.mode == MODE_WATCHDOG && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SPLIT))
    job.mode = MODE_NONBLOCKING;
  if (job.mode == MODE_NONBLOCKING && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_NONBLOCKING_INIT))
    job.mode = MODE_BLOCKING;
  static const char *const modes[] = {"watched split-blocking", "non-blocking", "blocking"};
  printf("ncclshim example: %s; %s communicators\n", ncclshim_nccl_message(nccl), modes[job.mode]);
  signal(SIGPIPE, SIG_IGN);
  launcher l = find_launcher();
  return l.name != NULL ? launched(nccl, &l, &job) : forked(nccl, &job, ranks);
}
