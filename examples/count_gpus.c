/* Counting GPUs without initialising CUDA in this process: a child asks and reports through a
 * pipe. CUDA initialised before fork() is unusable in the children (a forked child gets
 * CUDA_ERROR_NOT_INITIALIZED), and the launcher forks its workers after this. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allreduce.h"
#include "ncclshim/cuda.h"

typedef struct answer {
  int count; /* -1: none, see why */
  char why[512];
} answer;

static void ask(int fd) {
  answer a = {-1, ""};
  ncclshim_cuda *cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_init(cuda) == NCCLSHIM_OK &&
      ncclshim_cuda_device_count(cuda, &a.count) == NCCLSHIM_OK && a.count == 0)
    snprintf(a.why, sizeof(a.why), "the CUDA driver shows no device");
  else if (a.count <= 0)
    snprintf(a.why, sizeof(a.why), "%s", ncclshim_last_error());
  if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a)) _exit(1);
  _exit(0);
}

int count_gpus(char *why, size_t size) {
  int fds[2];
  answer a = {-1, "cannot start a process to count the GPUs"};
  fflush(NULL);
  if (pipe(fds) != 0) goto out;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    ask(fds[1]);
  }
  close(fds[1]);
  if (pid > 0) {
    if (read(fds[0], &a, sizeof(a)) != (ssize_t)sizeof(a)) {
      a.count = -1;
      snprintf(a.why, sizeof(a.why), "the process counting the GPUs died");
    }
    waitpid(pid, NULL, 0);
  }
  close(fds[0]);
out:
  if (a.count <= 0) snprintf(why, size, "%s", a.why);
  return a.count > 0 ? a.count : -1;
}
