#include "gpu_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t gpu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gpu_report(const gpu_rank *r, const char *file, int line, const char *cond, const char *format,
                ...) {
  char what[512];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof(what), format, args);
  va_end(args);
  printf("rank %d: FAIL %s:%d: %s (%s)\n  ncclshim: %s\n", r ? r->rank : -1, file, line, what, cond,
         ncclshim_last_error());
  fflush(stdout);
}

/* The GPU count, asked by a child that initialises CUDA and exits. */
static int count_in_child(char *why, size_t size) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ncclshim_cuda *cuda = ncclshim_cuda_default();
    int count = -1;
    char text[512] = "";
    if (ncclshim_cuda_init(cuda) != NCCLSHIM_OK ||
        ncclshim_cuda_device_count(cuda, &count) != NCCLSHIM_OK)
      snprintf(text, sizeof(text), "%s", ncclshim_last_error());
    if (write(fds[1], &count, sizeof(count)) < 0 || write(fds[1], text, sizeof(text)) < 0) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  int count = -1;
  if (pid < 0 || read(fds[0], &count, sizeof(count)) != (ssize_t)sizeof(count) ||
      read(fds[0], why, size) < 0)
    count = -1;
  close(fds[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return count;
}

int gpu_require(int need) {
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK) {
    printf("skip: no NCCL (%s)\n", ncclshim_nccl_message(nccl));
    exit(GPU_SKIP);
  }
  char why[512] = "";
  int count = count_in_child(why, sizeof(why));
  if (count < need) {
    printf("skip: %d GPU(s) visible, %d needed%s%s\n", count < 0 ? 0 : count, need,
           why[0] ? ": " : "", why);
    exit(GPU_SKIP);
  }
  printf("%s; %d GPU(s)\n", ncclshim_nccl_message(nccl), count);
  fflush(stdout);
  return count;
}

int gpu_open(gpu_rank *r, int device) {
  r->nccl = ncclshim_nccl_default();
  r->t = ncclshim_nccl_functions(r->nccl);
  r->cuda = ncclshim_cuda_default();
  r->cu = ncclshim_cuda_functions(r->cuda);
  GPU_OK(r, ncclshim_cuda_init(r->cuda));
  GPU_OK(r, ncclshim_cuda_device_activate(r->cuda, device, NULL));
  GPU_OK(r, ncclshim_cuda_stream_create(r->cuda, NCCLSHIM_CU_STREAM_NON_BLOCKING, &r->stream));
  return GPU_PASS;
}

int gpu_wait_child(int pid, int limit_ms, const char *what) {
  int64_t deadline = gpu_now_ms() + limit_ms;
  int status;
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return -1;
    if (gpu_now_ms() > deadline) {
      printf("FAIL: %s (pid %d) still running after %d ms: killed\n", what, pid, limit_ms);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    struct timespec ms = {0, 10 * 1000 * 1000};
    nanosleep(&ms, NULL);
  }
  if (WIFSIGNALED(status)) {
    printf("FAIL: %s (pid %d) died of signal %d\n", what, pid, WTERMSIG(status));
    return -1;
  }
  return WEXITSTATUS(status);
}

int gpu_blocking_arg(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "blocking") == 0) return 1;
  if (argc == 2 && strcmp(argv[1], "nonblocking") == 0) return 0;
  fprintf(stderr, "usage: %s blocking|nonblocking\n", argv[0]);
  return -1;
}

int gpu_ready_comm(gpu_rank *r, int blocking, int timeout_ms, ncclshim_comm **comm) {
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = blocking;
  GPU_OK(r, ncclshim_comm_init(r->nccl, r->nranks, &r->id, r->rank, &options, comm));
  ncclshim_comm_state state = ncclshim_comm_state_of(*comm);
  GPU_CHECK(r, state == NCCLSHIM_COMM_READY || (!blocking && state == NCCLSHIM_COMM_INITIALIZING),
            "state after init: %s", ncclshim_comm_state_name(state));
  GPU_OK(r, ncclshim_comm_wait(*comm, timeout_ms));
  GPU_CHECK(r, ncclshim_comm_state_of(*comm) == NCCLSHIM_COMM_READY, "ready after the wait");
  return GPU_PASS;
}

int gpu_read_all(int fd, void *data, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t n = read(fd, (char *)data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

int gpu_run_ranks(int nranks, gpu_rank_fn fn, void *arg, int limit_s) {
  enum { MAX = 64 };
  pid_t pids[MAX];
  int fds[MAX];
  if (nranks > MAX) nranks = MAX;
  fflush(NULL);
  for (int i = 0; i < nranks; i++) {
    int p[2];
    if (pipe(p) != 0) return GPU_FAIL;
    pids[i] = fork();
    if (pids[i] == 0) {
      close(p[1]);
      for (int j = 0; j < i; j++) close(fds[j]);
      gpu_rank r = {.rank = i, .nranks = nranks};
      int rc = GPU_FAIL;
      if (gpu_read_all(p[0], &r.id, sizeof(r.id)) != 0)
        printf("rank %d: FAIL no unique id from the parent\n", i);
      else if ((rc = gpu_open(&r, i)) == GPU_PASS)
        rc = fn(&r, arg);
      fflush(stdout);
      exit(rc);
    }
    close(p[0]);
    fds[i] = p[1];
  }
  ncclUniqueId id;
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  int ok = ncclshim_nccl_check(nccl, ncclshim_nccl_functions(nccl)->ncclGetUniqueId(&id),
                               "ncclGetUniqueId") == NCCLSHIM_OK;
  if (!ok) printf("FAIL: %s\n", ncclshim_last_error());
  for (int i = 0; i < nranks; i++) {
    if (ok && write(fds[i], &id, sizeof(id)) != (ssize_t)sizeof(id)) ok = 0;
    close(fds[i]);
  }
  int64_t deadline = gpu_now_ms() + (int64_t)limit_s * 1000;
  int failed = !ok, skipped = 0;
  for (int i = 0; i < nranks; i++) {
    char what[32];
    snprintf(what, sizeof(what), "rank %d", i);
    int64_t left = deadline - gpu_now_ms();
    int rc = gpu_wait_child(pids[i], left > 0 ? (int)left : 0, what);
    if (rc == GPU_SKIP)
      skipped = 1;
    else if (rc != GPU_PASS)
      failed = 1;
  }
  return failed ? GPU_FAIL : skipped ? GPU_SKIP : GPU_PASS;
}

float gpu_rank_value(int rank, size_t i) { return (float)(rank + 1) * (float)(i % 7 + 1); }
float gpu_sum_value(int nranks, size_t i) {
  return (float)(nranks * (nranks + 1) / 2) * (float)(i % 7 + 1);
}

int gpu_fill(gpu_rank *r, void *device, size_t count, float (*value)(int rank, size_t i)) {
  float *host = malloc(count * sizeof(float));
  GPU_CHECK(r, host != NULL, "host memory");
  for (size_t i = 0; i < count; i++) host[i] = value(r->rank, i);
  ncclshim_cu_result rc =
      r->cu->cuMemcpyHtoD((CUdeviceptr)(uintptr_t)device, host, count * sizeof(float));
  free(host);
  GPU_CHECK(r, rc == NCCLSHIM_CUDA_SUCCESS, "cuMemcpyHtoD: %d", rc);
  return GPU_PASS;
}

int gpu_expect(gpu_rank *r, const void *device, size_t count, const char *what,
               float (*expected)(int nranks, size_t i)) {
  float *host = malloc(count * sizeof(float));
  GPU_CHECK(r, host != NULL, "host memory");
  ncclshim_cu_result rc =
      r->cu->cuMemcpyDtoH(host, (CUdeviceptr)(uintptr_t)device, count * sizeof(float));
  size_t bad = count;
  for (size_t i = 0; rc == NCCLSHIM_CUDA_SUCCESS && i < count && bad == count; i++)
    if (host[i] != expected(r->nranks, i)) bad = i;
  float seen = bad < count ? host[bad] : 0;
  free(host);
  GPU_CHECK(r, rc == NCCLSHIM_CUDA_SUCCESS, "cuMemcpyDtoH: %d", rc);
  GPU_CHECK(r, bad == count, "%s: element %zu is %g, expected %g", what, bad, (double)seen,
            (double)expected(r->nranks, bad));
  return GPU_PASS;
}

int gpu_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t size = sizeof(addr);
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &size) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}
