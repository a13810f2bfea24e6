/* A rank killed while its peer works, on two GPUs:
 *   gpu_faults blocking|nonblocking|watchdog collective|init|windows fork|spawn
 * Two ranks, forked (the unique id through pipes) or started as independent programs meeting
 * at NCCL_COMM_ID=127.0.0.1:<port>. Rank 1 is SIGKILLed while both loop over all-reduces
 * (collective), during a non-blocking init (init), or while both loop over all-reduces on
 * symmetric windows they registered (windows). Rank 0 must report TIMEOUT or NCCL_ERROR from
 * a bounded wait within its deadline + 10 % of the kill, abort within the abort deadline,
 * free and destroy without hanging and exit 0, and no process of the case may be left.
 * `watchdog`: a NCCLSHIM_COMM_SPLIT_BLOCKING communicator (bounded init, blocking
 * collectives) watched by the watchdog with the same deadline: the failure must come from
 * the watchdog within the deadline + 10 % of the operation it names.
 * Prints "FAULTS-CSV,..." (the figures) and "FAULTS-MSG,..." (rank 0's message) for
 * tests/gpu/comm/faults.sh. NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 in the environment make NCCL use
 * its socket transport over loopback, as between nodes. Exit 0 pass, 1 fail, 77 skipped. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_faults.h"
#include "support.h"

/* The kill comes this long after both ranks loop; the whole case is bounded. */
enum { KILL_AFTER_MS = 200, CASE_LIMIT_MS = 45000, EXIT_LIMIT_MS = 15000 };

static const char *const point_names[] = {"collective", "init", "windows"};

const char *fault_kind(const fault_case *c) {
  return c->watchdog ? "watchdog" : c->blocking ? "blocking" : "nonblocking";
}

static int parse(char **args, fault_case *c) {
  c->blocking = strcmp(args[0], "blocking") == 0;
  c->watchdog = strcmp(args[0], "watchdog") == 0;
  if (!c->blocking && !c->watchdog && strcmp(args[0], "nonblocking") != 0) return -1;
  int point = -1;
  for (int i = 0; i < 3; i++)
    if (strcmp(args[1], point_names[i]) == 0) point = i;
  if (point < 0) return -1;
  c->point = (fault_point)point;
  c->spawn = strcmp(args[2], "spawn") == 0;
  if (!c->spawn && strcmp(args[2], "fork") != 0) return -1;
  return c->blocking && c->point == KILL_IN_INIT ? -1 : 0; /* a blocking init has no bound */
}

/* A started program (spawn): its rank and report pipe come as arguments, the id from
 * NCCL_COMM_ID through ncclGetUniqueId. */
static int worker_main(char **argv) {
  fault_case c;
  gpu_rank r = {.rank = atoi(argv[2]), .nranks = 2};
  int fd = atoi(argv[3]);
  if (parse(argv + 4, &c) != 0 || gpu_open(&r, r.rank) != GPU_PASS) return GPU_FAIL;
  GPU_OK(&r, ncclshim_nccl_check(r.nccl, r.t->ncclGetUniqueId(&r.id), "ncclGetUniqueId"));
  int rc = fault_rank(&r, &c, fd);
  fflush(stdout);
  return rc;
}

typedef struct ranks {
  pid_t pid[2];
  pid_t group; /* both ranks' process group, killed at the end */
  int reports; /* read end of the ranks' report pipe */
  int id[2];   /* fork: write ends of the id pipes */
} ranks;

/* The child side of start(): become rank `rank`, never return. */
static void child(const fault_case *c, const char *self, int rank, int report_fd, int id_fd,
                  const char *comm_id) {
  if (c->spawn) {
    setenv("NCCL_COMM_ID", comm_id, 1);
    char rank_text[16], fd_text[16];
    snprintf(rank_text, sizeof(rank_text), "%d", rank);
    snprintf(fd_text, sizeof(fd_text), "%d", report_fd);
    char *args[] = {(char *)self,
                    "--worker",
                    rank_text,
                    fd_text,
                    (char *)fault_kind(c),
                    (char *)point_names[c->point],
                    "spawn",
                    NULL};
    execv(self, args);
    printf("rank %d: cannot start %s: %s\n", rank, self, strerror(errno));
    _exit(GPU_FAIL);
  }
  gpu_rank r = {.rank = rank, .nranks = 2};
  int rc = GPU_FAIL;
  if (gpu_read_all(id_fd, &r.id, sizeof(r.id)) != 0)
    printf("rank %d: no unique id from the harness\n", rank);
  else if (gpu_open(&r, rank) == GPU_PASS)
    rc = fault_rank(&r, c, report_fd);
  fflush(stdout);
  exit(rc); /* a clean exit: atexit handlers and NCCL's own teardown run */
}

/* Start both ranks in a process group of their own. */
static int start(const fault_case *c, const char *self, ranks *rk) {
  int reports[2];
  char comm_id[64] = "";
  if (pipe(reports) != 0) return -1;
  if (c->spawn)
    snprintf(comm_id, sizeof(comm_id), "127.0.0.1:%d", gpu_free_port());
  else
    unsetenv("NCCL_COMM_ID"); /* the id comes from here, its root thread lives here */
  rk->group = 0;
  for (int i = 0; i < 2; i++) {
    int ids[2] = {-1, -1};
    if (!c->spawn && pipe(ids) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      setpgid(0, rk->group);
      close(reports[0]);
      if (i == 1 && !c->spawn) close(rk->id[0]);
      if (!c->spawn) close(ids[1]);
      child(c, self, i, reports[1], ids[0], comm_id);
    }
    setpgid(pid, rk->group ? rk->group : pid);
    if (!rk->group) rk->group = pid;
    rk->pid[i] = pid;
    if (!c->spawn) {
      close(ids[0]);
      rk->id[i] = ids[1];
    }
  }
  close(reports[1]);
  rk->reports = reports[0];
  if (c->spawn) return 0;
  ncclUniqueId id;
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  int ok = ncclshim_nccl_check(nccl, ncclshim_nccl_functions(nccl)->ncclGetUniqueId(&id),
                               "ncclGetUniqueId") == NCCLSHIM_OK;
  if (!ok) printf("FAIL: %s\n", ncclshim_last_error());
  for (int i = 0; i < 2; i++) {
    if (ok && write(rk->id[i], &id, sizeof(id)) != (ssize_t)sizeof(id)) ok = 0;
    close(rk->id[i]);
  }
  return ok ? 0 : -1;
}

/* Reap `pid` within limit_ms (SIGKILL after that): its wait status, or -1 if it had to be
 * killed. */
static int reap(pid_t pid, int limit_ms) {
  int status;
  return reap_child(pid, limit_ms, &status) == 0 ? status : -1;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Follow the ranks' reports: kill rank 1 at the chosen point, then wait for rank 0's result.
 * *kill_at: when rank 1 was killed (-1: never). Returns 1 with *result filled if rank 0
 * reported. */
static int follow(const fault_case *c, ranks *rk, int64_t *kill_at, fault_report *result) {
  report_kind trigger = c->point == KILL_IN_INIT ? INIT_STARTED : LOOPING;
  int seen[2] = {0, 0};
  int64_t deadline = gpu_now_ms() + CASE_LIMIT_MS;
  *kill_at = -1;
  while (gpu_now_ms() < deadline) {
    struct pollfd p = {.fd = rk->reports, .events = POLLIN};
    if (poll(&p, 1, 100) > 0) {
      fault_report report;
      if (gpu_read_all(rk->reports, &report, sizeof(report)) != 0) {
        printf("FAIL: every rank closed its report pipe without a result\n");
        return 0;
      }
      if (report.rank < 0 || report.rank > 1) continue;
      if (report.kind == trigger) seen[report.rank] = 1;
      if (report.kind == RESULT && report.rank == 0) {
        *result = report;
        return 1;
      }
    }
    if (*kill_at < 0 && seen[0] && seen[1]) {
      if (c->point != KILL_IN_INIT) sleep_ms(KILL_AFTER_MS);
      kill(rk->pid[1], SIGKILL);
      *kill_at = gpu_now_ms();
      printf("rank 1 (pid %d) killed %s\n", rk->pid[1],
             c->point == KILL_IN_INIT ? "during its non-blocking init" : "while both loop");
      fflush(stdout);
    }
  }
  printf("FAIL: no result from rank 0 within %d ms\n", CASE_LIMIT_MS);
  return 0;
}

static const char *transport(void) {
  const char *p2p = getenv("NCCL_P2P_DISABLE"), *shm = getenv("NCCL_SHM_DISABLE");
  return p2p && shm && strcmp(p2p, "1") == 0 && strcmp(shm, "1") == 0 ? "socket" : "default";
}

static int run_case(const fault_case *c, const char *self) {
  char name[64], version[16];
  snprintf(name, sizeof(name), "%s-%s-%s", point_names[c->point], fault_kind(c),
           c->spawn ? "spawn" : "fork");
  ncclshim_format_version(ncclshim_version(), version, sizeof(version));
  ranks rk;
  if (start(c, self, &rk) != 0) {
    printf("FAIL: cannot start the ranks: %s\n", strerror(errno));
    return GPU_FAIL;
  }
  int64_t kill_at;
  fault_report result = {0};
  int have = follow(c, &rk, &kill_at, &result);
  if (kill_at < 0) kill(rk.pid[1], SIGKILL);
  int rank1 = reap(rk.pid[1], EXIT_LIMIT_MS);
  int rank0 = reap(rk.pid[0], EXIT_LIMIT_MS);
  int orphans = kill(-rk.group, 0) == 0; /* anything of the group still there? */
  kill(-rk.group, SIGKILL);
  close(rk.reports);

  if (have && strncmp(result.problem, "skip: ", 6) == 0) { /* windows do not register here */
    printf("%s: %s\n", name, result.problem);
    return GPU_SKIP;
  }
  int rank1_killed = rank1 != -1 && WIFSIGNALED(rank1) && WTERMSIG(rank1) == SIGKILL;
  int rank0_exit = rank0 == -1 ? -1 : WIFEXITED(rank0) ? WEXITSTATUS(rank0) : 128 + WTERMSIG(rank0);
  int64_t after_kill = have && kill_at >= 0 ? result.failed_at - kill_at : -1;
  const char *problem = !have            ? "rank 0 gave no result"
                        : !result.passed ? result.problem
                        : kill_at < 0    ? "rank 1 was never killed"
                        : !rank1_killed  ? "rank 1 did not end by the SIGKILL"
                        : after_kill < 0 ? "rank 0 failed before rank 1 was killed"
                        : after_kill > WAIT_MS + WAIT_MS / 10
                            ? "detected later than the deadline + 10 %"
                        : rank0_exit != 0 ? "rank 0 did not exit 0"
                        : orphans         ? "a process of the case was left behind"
                                          : NULL;
  printf("FAULTS-CSV,%s,%s,%s,%s,%s,%s,%s,%s,%lld,%d,%lld,%s,%lld,%d,%s,%lld,%d,%d,%s,%d,%s\n",
         name, fault_kind(c), c->spawn ? "spawn" : "fork", transport(), version,
         point_names[c->point], have ? result.phase : "-",
         have ? ncclshim_status_name((ncclshim_status)result.status) : "-",
         (long long)result.wait_ms, WAIT_MS, (long long)after_kill,
         have ? ncclshim_status_name((ncclshim_status)result.abort_status) : "-",
         (long long)result.abort_ms, ABORT_MS, have ? result.drained : "-",
         (long long)result.drain_ms, result.iterations, rank0_exit,
         rank1_killed ? "killed" : "not-killed", orphans, problem ? "FAIL" : "PASS");
  printf("FAULTS-MSG,%s,%s,%s: %s\n", name, transport(), version,
         have ? result.message : "(no result)");
  if (problem) printf("FAIL: %s: %s\n", name, problem);
  return problem ? GPU_FAIL : GPU_PASS;
}

int main(int argc, char **argv) {
  if (argc == 7 && strcmp(argv[1], "--worker") == 0) return worker_main(argv);
  fault_case c;
  if (argc != 4 || parse(argv + 1, &c) != 0) {
    fprintf(stderr,
            "usage: %s blocking|nonblocking|watchdog collective|init|windows fork|spawn "
            "(init: nonblocking only)\n",
            argv[0]);
    return GPU_FAIL;
  }
  gpu_require(2);
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  if (!c.blocking && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_NONBLOCKING_INIT)) {
    printf("skip: this NCCL has no non-blocking communicators\n");
    return GPU_SKIP;
  }
  if (c.watchdog && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SPLIT)) {
    printf("skip: this NCCL has no ncclCommSplit\n");
    return GPU_SKIP;
  }
  if (c.point == KILL_AFTER_WINDOWS && !ncclshim_nccl_has(nccl, NCCLSHIM_CAP_SYMMETRIC_MEMORY)) {
    printf("skip: this NCCL has no symmetric memory\n");
    return GPU_SKIP;
  }
  return run_case(&c, "/proc/self/exe");
}
