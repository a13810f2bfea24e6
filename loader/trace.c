#include "trace.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blocking.h"
#include "elf_check.h"

extern char **environ;

/* ---- The stub: one PT_LOAD holding a dynamic section that needs `soname` -------------- */

typedef struct stub {
  ElfW(Ehdr) header;
  ElfW(Phdr) segments[2];
  ElfW(Dyn) dynamic[7];
  ElfW(Sym) symbols[1];
  ElfW(Word) hash[4]; /* nbucket 1, nchain 1, bucket 0, chain 0: no symbol */
  char strings[256];  /* "\0" soname "\0" */
} stub;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STUB_DATA ELFDATA2LSB
#else
#define STUB_DATA ELFDATA2MSB
#endif

static int make_stub(const char *soname, unsigned machine, stub *s) {
  size_t length = strlen(soname);
  if (length + 2 > sizeof(s->strings)) return -1;
  memset(s, 0, sizeof(*s));
  memcpy(s->header.e_ident, ELFMAG, SELFMAG);
  s->header.e_ident[EI_CLASS] = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  s->header.e_ident[EI_DATA] = STUB_DATA;
  s->header.e_ident[EI_VERSION] = EV_CURRENT;
  s->header.e_type = ET_DYN;
  s->header.e_machine = (ElfW(Half))machine;
  s->header.e_version = EV_CURRENT;
  s->header.e_phoff = offsetof(stub, segments);
  s->header.e_ehsize = sizeof(s->header);
  s->header.e_phentsize = sizeof(ElfW(Phdr));
  s->header.e_phnum = 2;
  s->segments[0] = (ElfW(Phdr)){.p_type = PT_LOAD,
                                .p_flags = PF_R | PF_W,
                                .p_align = 4096,
                                .p_filesz = sizeof(*s),
                                .p_memsz = sizeof(*s)};
  s->segments[1] = (ElfW(Phdr)){.p_type = PT_DYNAMIC,
                                .p_flags = PF_R | PF_W,
                                .p_offset = offsetof(stub, dynamic),
                                .p_vaddr = offsetof(stub, dynamic),
                                .p_paddr = offsetof(stub, dynamic),
                                .p_filesz = sizeof(s->dynamic),
                                .p_memsz = sizeof(s->dynamic),
                                .p_align = sizeof(void *)};
  memcpy(s->strings + 1, soname, length + 1);
  const ElfW(Dyn) dynamic[7] = {{DT_NEEDED, {1}},
                                {DT_STRTAB, {offsetof(stub, strings)}},
                                {DT_STRSZ, {length + 2}},
                                {DT_SYMTAB, {offsetof(stub, symbols)}},
                                {DT_SYMENT, {sizeof(ElfW(Sym))}},
                                {DT_HASH, {offsetof(stub, hash)}},
                                {DT_NULL, {0}}};
  memcpy(s->dynamic, dynamic, sizeof(dynamic));
  s->hash[0] = s->hash[1] = 1;
  return 0;
}

enum { INTERPRETER_MAX = 512, OUTPUT_MAX = 64 * 1024 };

/* ---- The loader to ask: this program's own interpreter (PT_INTERP) -------------------- */

static int read_interpreter(struct dl_phdr_info *info, size_t size, void *context) {
  (void)size;
  char *interpreter = context;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_INTERP && ph->p_filesz < INTERPRETER_MAX)
      snprintf(interpreter, INTERPRETER_MAX, "%.*s", (int)ph->p_filesz,
               (const char *)(info->dlpi_addr + ph->p_vaddr));
  }
  return 1; /* the program is the first object */
}

/* The stub in a memory file (a file in /tmp where there is none), for the loader to open as
 * /proc/self/fd/N. The descriptor, or -1. */
static int stub_file(const stub *s, char *path, size_t size) {
  int fd = -1;
#ifdef SYS_memfd_create
  /* Without MFD_CLOEXEC: the loader's child opens it as /proc/self/fd/N. */
  fd = (int)syscall(SYS_memfd_create, "ncclshim-trace-stub", 0u);
#endif
  char own[64];
  snprintf(own, sizeof(own), "/proc/self/fd/%d", fd);
  if (fd >= 0 && access(own, R_OK) != 0) { /* /proc hidden: the child could not open it */
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    snprintf(path, size, "/tmp/ncclshim-trace-XXXXXX");
    fd = mkostemp(path, O_CLOEXEC); /* the child opens it by its path */
    /* Readable by the child, which runs as the real user (run_loader). */
    if (fd >= 0) fchmod(fd, 0644);
  }
  if (fd >= 0 && write(fd, s, sizeof(*s)) != (ssize_t)sizeof(*s)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* This environment without the loader's trace and debug variables, with ours added. */
static char **trace_environment(void) {
  size_t count = 0;
  for (char **e = environ; e && *e; e++) count++;
  char **env = calloc(count + 5, sizeof(*env));
  if (env == NULL) return NULL;
  size_t n = 0;
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "LD_TRACE_", 9) != 0 && strncmp(*e, "LD_DEBUG", 8) != 0 &&
        strncmp(*e, "LD_WARN=", 8) != 0 && strncmp(*e, "LD_BIND_NOW=", 12) != 0)
      env[n++] = *e;
  env[n++] = "LD_TRACE_LOADED_OBJECTS=1";
  /* As `ldd -r`: relocations are processed too (touching every page they write, where a
   * truncated file faults) and each failure is printed; constructors still never run. */
  env[n++] = "LD_WARN=yes";
  env[n++] = "LD_BIND_NOW=1";
  env[n++] = "LD_DEBUG=libs"; /* "trying file=..." on stderr: the file a failure is about */
  return env;
}

typedef struct output {
  char text[OUTPUT_MAX];
  size_t length;
  int open;
} output;

static void drain(int fd, output *o) {
  char discard[4096];
  char *to = o->length + 1 < sizeof(o->text) ? o->text + o->length : discard;
  size_t room = to == discard ? sizeof(discard) : sizeof(o->text) - 1 - o->length;
  ssize_t got = read(fd, to, room);
  if (got > 0 && to != discard) o->length += (size_t)got;
  if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) o->open = 0;
  o->text[o->length] = '\0';
}

static long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Run the loader on the stub; its stdout and stderr, and how it ended (-1: timed out; -2:
 * it could not be started, errno set: no pipe or process, or the kernel refused to execute
 * it, as without binfmt_misc under qemu-user or from a noexec mount). */
static int run_loader(const char *interpreter, const char *stub_path, int inhibit_cache,
                      int limit_ms, output *out, output *err, int *status) {
  char **env = trace_environment();
  int outp[2] = {-1, -1}, errp[2] = {-1, -1}, execp[2] = {-1, -1};
  if (env == NULL || pipe(outp) != 0 || pipe(errp) != 0 || pipe2(execp, O_CLOEXEC) != 0) {
    int saved = errno;
    free(env);
    for (int i = 0; i < 2; i++) {
      if (outp[i] >= 0) close(outp[i]);
      if (errp[i] >= 0) close(errp[i]);
      if (execp[i] >= 0) close(execp[i]);
    }
    errno = saved;
    return -2;
  }
  const char *argv[4] = {interpreter, stub_path, NULL, NULL};
  if (inhibit_cache) argv[1] = "--inhibit-cache", argv[2] = stub_path;
  pid_t pid = fork();
  if (pid == 0) {
    /* A plain process is the user's own: in a setuid or setgid program the loader runs as
     * the real user, not in secure mode (where it would trace nothing a program sees). */
    gid_t gid = getgid();
    uid_t uid = getuid();
    if (gid != getegid() && setresgid(gid, gid, gid) != 0) _exit(126);
    if (uid != geteuid() && setresuid(uid, uid, uid) != 0) _exit(126);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(outp[1], 1);
    dup2(errp[1], 2);
    execve(interpreter, (char *const *)argv, env);
    int why = errno; /* the exec pipe closes on a successful exec: nothing arrives then */
    _exit(write(execp[1], &why, sizeof(why)) == (ssize_t)sizeof(why) ? 127 : 126);
  }
  int saved = errno;
  free(env);
  close(outp[1]);
  close(errp[1]);
  close(execp[1]);
  int why = 0;
  if (pid > 0 && read(execp[0], &why, sizeof(why)) == (ssize_t)sizeof(why)) {
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    saved = why, pid = -1;
  }
  close(execp[0]);
  if (pid < 0) {
    close(outp[0]);
    close(errp[0]);
    errno = saved;
    return -2;
  }
  out->open = err->open = 1;
  long deadline = now_ms() + limit_ms;
  int timed_out = 0;
  while (out->open || err->open) {
    struct pollfd fds[2] = {{outp[0], out->open ? POLLIN : 0, 0},
                            {errp[0], err->open ? POLLIN : 0, 0}};
    long left = deadline - now_ms();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    if (poll(fds, 2, (int)left) < 0 && errno != EINTR) break;
    if (fds[0].revents) drain(outp[0], out);
    if (fds[1].revents) drain(errp[0], err);
  }
  if (timed_out) kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  close(outp[0]);
  close(errp[0]);
  return timed_out ? -1 : 0;
}

/* The last "trying file=X" line of the loader's debug output: the file it was at. */
static void last_tried(const char *text, char *path, size_t size) {
  for (const char *at = strstr(text, "trying file="); at; at = strstr(at + 1, "trying file=")) {
    at += strlen("trying file=");
    snprintf(path, size, "%.*s", (int)strcspn(at, "\n"), at);
  }
}

/* "\tsoname => /path (0x...)" or "\tsoname => not found" in the trace. */
static int read_mapping(const char *text, const char *soname, ncshl_trace_result *r) {
  size_t length = strlen(soname);
  for (const char *line = text; *line;
       line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
    const char *name = line + strspn(line, " \t");
    if (strncmp(name, soname, length) != 0) continue;
    if (strncmp(name + length, " (0x", 4) == 0) { /* found under that very name: ./soname */
      r->outcome = NCSHL_TRACE_MAPS;
      snprintf(r->path, sizeof(r->path), "%s", soname);
      return 1;
    }
    if (strncmp(name + length, " => ", 4) != 0) continue;
    const char *target = name + length + 4;
    if (strncmp(target, "not found", 9) == 0) {
      r->outcome = NCSHL_TRACE_NOT_FOUND;
      snprintf(r->message, sizeof(r->message), "%s => not found", soname);
      return 1;
    }
    const char *end = strstr(target, " (0x");
    size_t span = end ? (size_t)(end - target) : strcspn(target, "\n");
    r->outcome = NCSHL_TRACE_MAPS;
    snprintf(r->path, sizeof(r->path), "%.*s", (int)span, target);
    return 1;
  }
  return 0;
}

/* A library the loader maps but cannot link: a version it needs that nothing has (a process
 * starting with it stops there), or an undefined symbol (RTLD_NOW fails on it). The first
 * such line of the loader's, from the words that say what is missing. */
static void read_link_errors(const char *text, ncshl_trace_result *r) {
  for (const char *line = text; *line;
       line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
    size_t span = strcspn(line, "\n");
    const char *version = strstr(line, "version `"), *symbol = strstr(line, "undefined symbol: ");
    /* An undefined symbol names the object that needs it, "(/path)"; an auditor's missing
     * la_* hooks, which LD_WARN also prints, say "(fatal)". */
    const char *needer = symbol ? strstr(symbol, "(/") : NULL;
    const char *at = version && version < line + span                                   ? version
                     : symbol && symbol < line + span && needer && needer < line + span ? symbol
                                                                                        : NULL;
    if (at == NULL) continue;
    size_t length = (size_t)(line + span - at);
    const char *tail = " (continued)"; /* glibc's mark of a trace that goes on past it */
    if (length > strlen(tail) && strncmp(at + length - strlen(tail), tail, strlen(tail)) == 0)
      length -= strlen(tail);
    r->outcome = NCSHL_TRACE_FAILS;
    snprintf(r->message, sizeof(r->message), "%.*s", (int)length, at);
    return;
  }
}

/* A library of the mapped one's own needs that the loader finds nowhere ("\tlibq.so.6 =>
 * not found"; the stub needs nothing else): a process starting with it stops there. */
static void read_missing_needs(const char *text, ncshl_trace_result *r) {
  for (const char *line = text; *line;
       line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
    const char *name = line + strspn(line, " \t"), *arrow = strstr(name, " => not found");
    if (arrow == NULL || arrow > name + strcspn(name, "\n")) continue;
    r->outcome = NCSHL_TRACE_FAILS;
    snprintf(r->message, sizeof(r->message),
             "%.*s, which %s needs, is found nowhere (cannot open shared object file)",
             (int)(arrow - name), name, r->path);
    return;
  }
}

/* A clean trace without a line for the name: an object already mapped (preloaded) has that
 * SONAME. The preloaded objects are the trace's lines of a bare absolute path. */
static int read_preloaded(const char *text, const char *interpreter, ncshl_trace_result *r) {
  size_t used = 0;
  for (const char *line = text; *line;
       line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
    const char *name = line + strspn(line, " \t");
    const char *end = strstr(name, " (0x");
    if (name[0] != '/' || end == NULL || end > name + strcspn(name, "\n")) continue;
    size_t span = (size_t)(end - name);
    if (strlen(interpreter) == span && strncmp(name, interpreter, span) == 0) continue;
    if (used + span + 2 > sizeof(r->preloaded)) break;
    memcpy(r->preloaded + used, name, span);
    used += span;
    r->preloaded[used++] = '\n';
    r->preloaded[used] = '\0';
  }
  if (used == 0) return 0;
  r->outcome = NCSHL_TRACE_PRELOADED;
  return 1;
}

/* The loader ended without tracing and without its "error while loading" line: it said
 * nothing of any library (it could not read its stub, refused to run, lacked memory), so it
 * was not asked, and what a plain process loads stays unknown. */
static void unanswered(int code, const char *said, ncshl_trace_result *r) {
  r->outcome = NCSHL_TRACE_UNAVAILABLE;
  r->path[0] = '\0';
  snprintf(r->message, sizeof(r->message),
           "the dynamic loader exited with status %d without tracing%s%.*s", code,
           said[0] ? ": " : "", (int)strcspn(said, "\n"), said);
}

/* What the loader's run came to (`ran`: 0 finished, -1 timed out), into r. */
static void read_trace(const char *soname, const char *interpreter, int limit_ms, int ran,
                       int status, const output *out, const output *err, ncshl_trace_result *r) {
  static const char loading[] = "error while loading shared libraries: ";
  if (ran == 0 && read_mapping(out->text, soname, r)) {
    if (r->outcome == NCSHL_TRACE_MAPS) read_missing_needs(out->text, r);
    if (r->outcome == NCSHL_TRACE_MAPS) read_link_errors(err->text, r);
    return;
  }
  if (ran == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
      read_preloaded(out->text, interpreter, r))
    return;
  last_tried(err->text, r->path, sizeof(r->path));
  const char *said = strstr(err->text, loading);
  r->outcome = NCSHL_TRACE_FAILS;
  if (ran == -1)
    snprintf(r->message, sizeof(r->message), "the dynamic loader did not finish in %d ms%s%s",
             limit_ms, r->path[0] ? " opening " : "", r->path);
  else if (WIFSIGNALED(status))
    snprintf(r->message, sizeof(r->message), "the dynamic loader was killed by signal %d (%s)%s%s",
             WTERMSIG(status), strsignal(WTERMSIG(status)), r->path[0] ? " mapping " : "", r->path);
  else if (said)
    snprintf(r->message, sizeof(r->message), "%.*s", (int)strcspn(said + sizeof(loading) - 1, "\n"),
             said + sizeof(loading) - 1);
  else
    unanswered(WEXITSTATUS(status), err->text, r);
}

void ncshl_trace(const char *soname, int inhibit_cache, int limit_ms, ncshl_trace_result *r) {
  memset(r, 0, sizeof(*r));
  r->outcome = NCSHL_TRACE_UNAVAILABLE;
  char interpreter[INTERPRETER_MAX] = "";
  dl_iterate_phdr(read_interpreter, interpreter);
  stub s;
  char temporary[64] = "", stub_path[64];
  if (interpreter[0] != '/' || make_stub(soname, ncshl_elf_native_machine(), &s) != 0) {
    snprintf(r->message, sizeof(r->message),
             "this program has no dynamic loader to ask (a static program)");
    return;
  }
  if (ncshl_search_blocks(soname, r->path, sizeof(r->path))) {
    r->outcome = NCSHL_TRACE_FAILS;
    snprintf(r->message, sizeof(r->message),
             "%s is not a regular file (a FIFO or a terminal): the dynamic loader waits forever "
             "opening or reading it",
             r->path);
    return;
  }
  r->path[0] = '\0';
  int fd = stub_file(&s, temporary, sizeof(temporary));
  if (fd < 0) {
    snprintf(r->message, sizeof(r->message), "cannot write the loader's stub: %s", strerror(errno));
    return;
  }
  if (temporary[0])
    snprintf(stub_path, sizeof(stub_path), "%s", temporary);
  else
    snprintf(stub_path, sizeof(stub_path), "/proc/self/fd/%d", fd);
  output *out = calloc(2, sizeof(*out)), *err = out + 1;
  int status = 0;
  int ran =
      out ? run_loader(interpreter, stub_path, inhibit_cache, limit_ms, out, err, &status) : -2;
  int why = errno;
  close(fd);
  if (temporary[0]) unlink(temporary);
  if (ran == -2)
    snprintf(r->message, sizeof(r->message), "cannot start %s: %s", interpreter,
             out ? strerror(why) : "out of memory");
  else
    read_trace(soname, interpreter, limit_ms, ran, status, out, err, r);
  if (r->outcome == NCSHL_TRACE_FAILS && strstr(r->message, stub_path) != NULL) {
    char said[sizeof(r->message)];
    snprintf(said, sizeof(said), "%s", r->message);
    r->outcome = NCSHL_TRACE_UNAVAILABLE;
    r->path[0] = '\0';
    snprintf(r->message, sizeof(r->message), "the dynamic loader could not read its stub: %s",
             said);
  }
  free(out);
}
