#include "hardening.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DIE(...) test_die("hardening", __VA_ARGS__)

char *hs_long_path(size_t length) {
  char *path = malloc(length + 1);
  if (path == NULL) DIE("out of memory");
  for (size_t i = 0; i < length; i++) path[i] = i % 201 == 0 ? '/' : 'a';
  path[length] = '\0';
  return path;
}

void hs_write(const char *path, const void *bytes, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(bytes, 1, size, f) != size || fclose(f) != 0)
    DIE("write %s: %s", path, strerror(errno));
  chmod(path, 0755);
}

void hs_patch(const char *path, long offset, unsigned char byte) {
  FILE *f = fopen(path, "r+b");
  if (f == NULL || fseek(f, offset, SEEK_SET) != 0 || fputc(byte, f) == EOF || fclose(f) != 0)
    DIE("patch %s: %s", path, strerror(errno));
}

int hs_helpers_run(const char *helper, char *why, size_t size) {
  if (helper == NULL) {
    snprintf(why, size, "no helper program given");
    return 0;
  }
  const char *argv[12];
  int argc = test_wrapper_words(argv, 8);
  argv[argc++] = helper;
  argv[argc++] = "--ping";
  argv[argc] = NULL;
  const char *envp[] = {NULL};
  pid_t pid;
  int fd, rc = spawn_piped(argv, envp, &pid, &fd);
  char out[16] = "";
  int status = 0;
  if (rc == 0) {
    ssize_t n = read(fd, out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    waitpid(pid, &status, 0);
    close(fd);
  }
  if (rc == 0 && strncmp(out, "pong", 4) == 0) return 1;
  snprintf(why, size, "cannot start helper programs here (%s: %s)", helper,
           rc ? strerror(rc) : "it did not run");
  return 0;
}

int hs_in_child(int (*fn)(void *arg), void *arg, int timeout_ms) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) DIE("fork: %s", strerror(errno));
  if (pid == 0) _exit(fn(arg));
  int status, killed = reap_child(pid, timeout_ms, &status);
  if (killed < 0) DIE("waitpid: %s", strerror(errno));
  if (killed) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int hs_become_nobody(void) {
  if (setgroups(0, NULL) != 0) return -1;
  if (setresgid(65534, 65534, 65534) != 0) return -1;
  if (setresuid(65534, 65534, 65534) != 0) return -1;
  return geteuid() == 65534 ? 0 : -1;
}

int hs_count_lines(const scenario *s, const char *prefix) {
  int count = 0;
  size_t length = strlen(prefix);
  for (const char *line = s->output; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
    if (strncmp(line, prefix, length) == 0) count++;
  return count;
}

const char *hs_attempt(const scenario *s, const char *who, const char *needle) {
  char key[64];
  snprintf(key, sizeof(key), "%s.attempts", who);
  int count = atoi(scenario_get(s, key));
  for (int i = 0; i < count; i++) {
    snprintf(key, sizeof(key), "%s.attempt.%d", who, i);
    const char *line = scenario_get(s, key);
    if (strstr(line, needle) != NULL) return line;
  }
  return "";
}
