#include "support.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenario_print.h"

#define DIE(...) test_die("test support", __VA_ARGS__)

void test_die(const char *who, const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "%s: ", who);
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(99);
}

int test_time_scale(void) {
  const char *text = getenv("NCCLSHIM_TEST_TIME_SCALE");
  if (text == NULL || text[0] == '\0') return 1;
  char *end;
  errno = 0;
  long scale = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || scale < 1 || scale > 100)
    DIE("NCCLSHIM_TEST_TIME_SCALE=%s: not a whole number from 1 to 100", text);
  return (int)scale;
}

int64_t test_slack_ms(int64_t ms) { return ms * test_time_scale(); }

/* malloc'd "<a><separator><b>", through *out rather than a return value: valgrind.supp and
 * sanitizer_defaults.h name join and env_entry, whose results tests keep, so each must stay a
 * frame of the allocation's stack, which a tail call into a shared helper would drop. */
static void joined(char **out, const char *a, char separator, const char *b) {
  size_t length = strlen(a) + strlen(b) + 2;
  *out = malloc(length);
  if (*out == NULL) DIE("out of memory");
  snprintf(*out, length, "%s%c%s", a, separator, b);
}

char *join(const char *a, const char *b) {
  char *path;
  joined(&path, a, '/', b);
  return path;
}

char *fake_path(const char *variant) {
  const char *dir = getenv("FAKE_DIR");
  if (dir == NULL) DIE("FAKE_DIR is not set");
  char name[128];
  snprintf(name, sizeof(name), "libfake-nccl-%s.so", variant);
  return join(dir, name);
}

char *env_entry(const char *key, const char *value) {
  char *entry;
  joined(&entry, key, '=', value);
  return entry;
}

void *symbol_if_loaded(const char *path, const char *symbol, char *why, size_t size) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle == NULL) {
    snprintf(why, size, "%s is not loaded", path);
    return NULL;
  }
  void *address = dlsym(handle, symbol);
  dlclose(handle);
  if (address == NULL) snprintf(why, size, "%s has no %s", path, symbol);
  return address;
}

void *loaded_symbol(const char *path, const char *symbol) {
  char why[4096 + 256];
  void *address = symbol_if_loaded(path, symbol, why, sizeof(why));
  if (address == NULL) DIE("%s", why);
  return address;
}

#define FAKE_CALL(path, name, type) ((type)(uintptr_t)loaded_symbol(path, name))

const fake_nccl_call *fake_last_call(const char *path) {
  return FAKE_CALL(path, "fake_nccl_last_call", fake_nccl_last_call_fn)();
}
void fake_set_result(const char *path, int result) {
  FAKE_CALL(path, "fake_nccl_set_result", fake_nccl_set_result_fn)(result);
}
int fake_version_calls(const char *path) {
  return FAKE_CALL(path, "fake_nccl_version_calls", fake_nccl_count_fn)();
}

char *scratch_dir(void) {
  char *dir = strdup("/tmp/ncclshim-test-XXXXXX");
  if (dir == NULL || mkdtemp(dir) == NULL) DIE("mkdtemp: %s", strerror(errno));
  return dir;
}

void make_dirs(const char *path) {
  char *copy = strdup(path);
  for (char *p = copy + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(copy, 0755);
    *p = '/';
  }
  if (mkdir(copy, 0755) != 0 && errno != EEXIST) DIE("mkdir %s: %s", copy, strerror(errno));
  free(copy);
}

void make_link(const char *target, const char *link) {
  char *dir = strdup(link);
  *strrchr(dir, '/') = '\0';
  make_dirs(dir);
  free(dir);
  unlink(link);
  if (symlink(target, link) != 0) DIE("symlink %s: %s", link, strerror(errno));
}

char *dir_with_link(const char *parent, const char *name, const char *file, const char *target) {
  char *dir = join(parent, name);
  char *link = join(dir, file);
  make_link(target, link);
  free(link);
  return dir;
}

void copy_file(const char *from, const char *to, size_t length, unsigned machine) {
  FILE *in = fopen(from, "rb");
  FILE *out = fopen(to, "wb");
  if (in == NULL || out == NULL) DIE("copy %s -> %s: %s", from, to, strerror(errno));
  char buf[65536];
  size_t total = 0, n;
  while (total < length && (n = fread(buf, 1, sizeof(buf), in)) > 0) {
    if (n > length - total) n = length - total;
    if (total == 0 && machine != 0 && n >= sizeof(Elf64_Ehdr)) {
      uint16_t m = (uint16_t)machine;
      memcpy(buf + offsetof(Elf64_Ehdr, e_machine), &m, sizeof(m));
    }
    fwrite(buf, 1, n, out);
    total += n;
  }
  fclose(in);
  if (fclose(out) != 0) DIE("write %s", to);
  chmod(to, 0755);
}

unsigned elf_machine(const char *path) {
  Elf64_Ehdr header;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t got = fread(&header, 1, sizeof(header), f);
  fclose(f);
  /* e_ident and e_machine lie at the same offsets in 32- and 64-bit headers. */
  if (got < offsetof(Elf64_Ehdr, e_machine) + sizeof(header.e_machine) ||
      memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return 0;
  return header.e_machine;
}

unsigned own_machine(void) {
  unsigned machine = elf_machine("/proc/self/exe");
  if (machine == 0) DIE("cannot read the ELF header of /proc/self/exe");
  return machine;
}

const char *machine_name(unsigned machine) {
  static char other[32];
  if (machine == EM_X86_64) return "x86-64";
  if (machine == EM_AARCH64) return "aarch64";
  snprintf(other, sizeof(other), "e_machine %u", machine);
  return other;
}

unsigned foreign_machine(void) { return own_machine() == EM_X86_64 ? EM_AARCH64 : EM_X86_64; }

/* The dynamic loader this process runs under (its PT_INTERP). */
static const char *interpreter(void) {
  static char path[256];
  FILE *f = fopen("/proc/self/exe", "rb");
  Elf64_Ehdr eh;
  if (f == NULL || fread(&eh, sizeof(eh), 1, f) != 1) DIE("cannot read /proc/self/exe");
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    fseek(f, (long)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize), SEEK_SET);
    if (fread(&ph, sizeof(ph), 1, f) != 1) break;
    if (ph.p_type == PT_INTERP && ph.p_filesz < sizeof(path)) {
      fseek(f, (long)ph.p_offset, SEEK_SET);
      if (fread(path, 1, ph.p_filesz, f) == ph.p_filesz) {
        fclose(f);
        return path;
      }
    }
  }
  fclose(f);
  DIE("no PT_INTERP");
}

void run_scenario(scenario *s, const char *const *args, const char *const *env) {
  const char *helper = getenv("SCENARIO");
  if (helper == NULL) DIE("SCENARIO is not set");
  run_program(s, helper, args, env);
}

/* A cross build's tests run under its exe_wrapper (qemu-user), but a program they start is
 * run by the kernel, which cannot run the target's ELF without binfmt_misc: every program of
 * the target goes through the wrapper too. meson gives the tests its words, shell-quoted, in
 * MESON_EXE_WRAPPER; unset in a native build. Returns how many words it put in `words`. */
int test_wrapper_words(const char **words, int max) {
  static char copy[1024];
  const char *wrapper = getenv("MESON_EXE_WRAPPER");
  if (wrapper == NULL || *wrapper == '\0') return 0;
  if (strlen(wrapper) >= sizeof(copy)) DIE("MESON_EXE_WRAPPER is too long: %s", wrapper);
  if (strpbrk(wrapper, "'\"\\") != NULL)
    DIE("MESON_EXE_WRAPPER has shell quoting, which the tests do not parse: %s", wrapper);
  strcpy(copy, wrapper);
  int count = 0;
  for (char *rest = NULL, *word = strtok_r(copy, " \t", &rest); word != NULL;
       word = strtok_r(NULL, " \t", &rest)) {
    if (count == max) DIE("MESON_EXE_WRAPPER has more than %d words: %s", max, wrapper);
    words[count++] = word;
  }
  return count;
}

void run_program(scenario *s, const char *helper, const char *const *args, const char *const *env) {
  const char *argv[64];
  int argc = test_wrapper_words(argv, 8);
  argv[argc++] = interpreter();
  argv[argc++] = "--inhibit-cache";
  const char *audit = getenv("HIDE_AUDIT");
  if (audit != NULL) { /* hide system-wide NCCL and CUDA driver too */
    argv[argc++] = "--audit";
    argv[argc++] = audit;
  }
  argv[argc++] = helper;
  for (int i = 0; args != NULL && args[i] != NULL && argc < 63; i++) argv[argc++] = args[i];
  argv[argc] = NULL;

  /* ncclshim reads the ld.so cache itself: inhibit that as well, unless the test chose one. */
  const char *envp[256];
  int envc = 0, has_cache = 0;
  for (int i = 0; env != NULL && env[i] != NULL && envc < 254; i++) {
    has_cache |= strncmp(env[i], "NCCLSHIM_LD_CACHE=", 18) == 0;
    envp[envc++] = env[i];
  }
  if (!has_cache) envp[envc++] = "NCCLSHIM_LD_CACHE=/dev/null";
  envp[envc] = NULL;
  pid_t pid;
  int fd, rc = spawn_piped(argv, envp, &pid, &fd);
  if (rc != 0) DIE("posix_spawnp %s: %s", argv[0], strerror(rc));
  collect_output(s, fd, pid);
}

int spawn_piped(const char *const *argv, const char *const *envp, pid_t *pid, int *read_fd) {
  int pipefd[2];
  if (pipe(pipefd) != 0) DIE("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  /* posix_spawnp: the wrapper may be a bare name, found on this process's PATH. */
  int rc = posix_spawnp(pid, argv[0], &actions, NULL, (char *const *)argv, (char *const *)envp);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) close(pipefd[0]);
  *read_fd = rc == 0 ? pipefd[0] : -1;
  return rc;
}

int reap_child(pid_t pid, int timeout_ms, int *status) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t deadline = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + timeout_ms;
  for (;;) {
    pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) return 0;
    if (done < 0 && errno != EINTR) return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
      return 1;
    }
    struct timespec pause = {0, 2 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

void collect_output(scenario *s, int fd, pid_t pid) {
  size_t used = 0;
  ssize_t n;
  while ((n = read(fd, s->output + used, sizeof(s->output) - 1 - used)) > 0) used += (size_t)n;
  s->output[used] = '\0';
  close(fd);
  int status;
  waitpid(pid, &status, 0);
  s->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *scenario_get(const scenario *s, const char *key) {
  static char value[4096];
  size_t key_length = strlen(key);
  for (const char *line = s->output; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, key, key_length) == 0 && line[key_length] == '=') {
      const char *start = line + key_length + 1;
      const char *end = strchr(start, '\n');
      size_t length = end ? (size_t)(end - start) : strlen(start);
      if (length >= sizeof(value)) length = sizeof(value) - 1;
      memcpy(value, start, length);
      value[length] = '\0';
      return value;
    }
  }
  return "";
}

const char *scenario_mismatch(const scenario *s, ...) {
  static char why[sizeof(s->output) + 8192];
  const char *found = NULL;
  va_list pairs;
  va_start(pairs, s);
  for (const char *key = va_arg(pairs, const char *); key != NULL && found == NULL;
       key = va_arg(pairs, const char *)) {
    const char *value = va_arg(pairs, const char *);
    const char *got = scenario_get(s, key);
    if (strcmp(got, value) == 0) continue;
    snprintf(why, sizeof(why), "%s=%s, expected %s; output:\n%s", key, got, value, s->output);
    found = why;
  }
  va_end(pairs);
  return found;
}

const char *scenario_attempt(const scenario *s, const char *needle) {
  int count = atoi(scenario_get(s, "attempts"));
  for (int i = 0; i < count; i++) {
    char key[32];
    snprintf(key, sizeof(key), "attempt.%d", i);
    const char *line = scenario_get(s, key);
    if (strstr(line, needle) != NULL) return line;
  }
  return "";
}

static const scenario_option *option_named(const scenario_option *options, const char *name) {
  for (; options->name != NULL; options++)
    if (strcmp(options->name, name) == 0) return options;
  return NULL;
}

int scenario_options(int argc, char **argv, const scenario_option *options) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc) {
      int failed = scenario_preload(argv[++i]);
      if (failed) return failed;
      continue;
    }
    const scenario_option *option = option_named(options, argv[i]);
    if (option == NULL || (option->value != NULL && i + 1 == argc)) {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
    if (option->value != NULL) *option->value = argv[++i];
    if (option->given != NULL) *option->given = 1;
  }
  return 0;
}
