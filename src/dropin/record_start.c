/* Turning the recorder on, when the library loads: NCCLSHIM_RECORD=N (the last N calls),
 * NCCLSHIM_RECORD_DIR (where dumps go; the working directory by default),
 * NCCLSHIM_RECORD_SIGNAL (a signal that dumps), NCCLSHIM_RECORD_AT_EXIT (dump at exit) and
 * NCCLSHIM_RECORD_HANG_MS (dump when an operation has not completed after that long).
 * A bad value leaves the recorder off, with a message naming it; the program runs on either
 * way. With the recorder off, no signal's action is ever changed. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/internal.h"
#include "record.h"
#include "record_hang.h"
#include "record_state.h"
#include "say.h"

enum { MAX_CALLS = 1 << 24, MAX_HANG_MS = 24 * 3600 * 1000 };

/* The dump signal's previous action, and SIGABRT's. */
static struct sigaction previous[2];
static int installed[2];

static void refuse(const char *variable, const char *value, const char *why) {
  char head[64];
  snprintf(head, sizeof(head), "%s=", variable);
  char tail[256];
  snprintf(tail, sizeof(tail), ": %s; the recorder stays off", why);
  ncs_rec_say(head, value, tail, 0);
}

/* "USR1", "SIGUSR1", "RTMIN+2", "SIGRTMAX-1" or a number, named or not, then checked the
 * same way; 0 when unusable:
 * one that cannot be caught, one raised by faults, SIGABRT (always dumped on), SIGCHLD (sent
 * whenever a child ends), and the real-time signals glibc keeps for itself (below SIGRTMIN:
 * sigaction refuses them, so a kill of one would end the process with no dump). */
/* RTMIN, RTMIN+n, RTMAX, RTMAX-n (glibc's run-time bounds, as kill -l names them); 0 when
 * not one of those, -1 when one out of range. */
static long parse_realtime(const char *name) {
  int from_min = strncasecmp(name, "RTMIN", 5) == 0, from_max = strncasecmp(name, "RTMAX", 5) == 0;
  if (!from_min && !from_max) return 0;
  const char *rest = name + 5;
  long offset = 0;
  if (*rest != '\0') {
    if (*rest != (from_min ? '+' : '-') || rest[1] < '0' || rest[1] > '9') return -1;
    char *end;
    errno = 0;
    offset = strtol(rest + 1, &end, 10);
    if (errno != 0 || *end != '\0' || offset > SIGRTMAX - SIGRTMIN) return -1;
  }
  return from_min ? SIGRTMIN + offset : SIGRTMAX - offset;
}

static int parse_signal(const char *text) {
  static const struct {
    const char *name;
    int number;
  } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT},   {"ILL", SIGILL},
               {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},     {"FPE", SIGFPE},
               {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
               {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
               {"CONT", SIGCONT}, {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
               {"TTOU", SIGTTOU}, {"URG", SIGURG},       {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
               {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
               {"POLL", SIGPOLL}, {"PWR", SIGPWR},       {"SYS", SIGSYS},     {"STKFLT", SIGSTKFLT},
               {"IOT", SIGIOT},   {"CLD", SIGCHLD},      {"UNUSED", SIGSYS}};
  const char *name = strncasecmp(text, "SIG", 3) == 0 ? text + 3 : text;
  long number = 0;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && number == 0; i++)
    if (strcasecmp(name, names[i].name) == 0) number = names[i].number;
  if (number == 0) number = parse_realtime(name);
  if (number == 0) {
    char *end;
    errno = 0;
    number = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') return 0;
  }
  if (number < 1 || number > SIGRTMAX || (number > SIGSYS && number < SIGRTMIN) ||
      number == SIGKILL || number == SIGSTOP || number == SIGSEGV || number == SIGBUS ||
      number == SIGFPE || number == SIGILL || number == SIGTRAP || number == SIGSYS ||
      number == SIGABRT || number == SIGCHLD)
    return 0;
  return (int)number;
}

/* What a signal does by default, once dumped on: ignored ones (and USR1, USR2, documented as
 * going on) go on; stop signals stop the process (SIGSTOP, so that the wrapper stays for the
 * next one); every other ends it. */
static int goes_on(int signo) {
  return signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGCONT || signo == SIGWINCH ||
         signo == SIGURG;
}

static int stops(int signo) { return signo == SIGTSTP || signo == SIGTTIN || signo == SIGTTOU; }

/* Dump, then let the signal do what it did before: call the previous handler; for a signal
 * whose default ends the process (TERM, INT, ABRT, a real-time signal, ...) end it; a stop
 * signal stops it; USR1, USR2, CONT, WINCH and URG go on. */
static void on_signal(int signo, siginfo_t *info, void *context) {
  ncs_rec_dump("signal", -1, signo);
  const struct sigaction *was = &previous[signo == SIGABRT];
  if (was->sa_flags & SA_SIGINFO) {
    if (was->sa_sigaction != NULL) was->sa_sigaction(signo, info, context);
  } else if (was->sa_handler != SIG_DFL && was->sa_handler != SIG_IGN) {
    was->sa_handler(signo);
  } else if (was->sa_handler == SIG_DFL && stops(signo)) {
    raise(SIGSTOP);
  } else if (was->sa_handler == SIG_DFL && !goes_on(signo)) {
    signal(signo, SIG_DFL);
    raise(signo);
  }
}

/* Over a handler the program installed, the wrapper keeps that handler's flags and mask (a
 * handler without SA_RESTART interrupts blocking calls, as the program expects); over the
 * default action or SIG_IGN, it restarts them (the dump signal breaks nothing). */
static void install(int which, int signo) {
  struct sigaction action = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
  sigemptyset(&action.sa_mask);
  if (sigaction(signo, NULL, &previous[which]) != 0) return;
  const struct sigaction *was = &previous[which];
  if ((was->sa_flags & SA_SIGINFO) || (was->sa_handler != SIG_DFL && was->sa_handler != SIG_IGN)) {
    action.sa_flags = SA_SIGINFO | (was->sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
    action.sa_mask = was->sa_mask;
  }
  installed[which] = sigaction(signo, &action, &previous[which]) == 0;
}

static void uninstall(int which, int signo) {
  if (installed[which]) sigaction(signo, &previous[which], NULL);
  installed[which] = 0;
}

/* A setting's value without the blanks around it (' 5' and '5 ' are 5); 0 when that does not
 * fit in `size` (never cut: a long value cut to its first digits would read as a number). */
static int trimmed(const char *value, char *text, size_t size) {
  while (isspace((unsigned char)*value)) value++;
  size_t n = strlen(value);
  while (n > 0 && isspace((unsigned char)value[n - 1])) n--;
  text[0] = '\0';
  if (n >= size) return 0;
  memcpy(text, value, n);
  text[n] = '\0';
  return 1;
}

/* The dump directory refused: NCCLSHIM_RECORD_DIR's value, or the working directory when it
 * is unset (not a variable that was never set). */
static void refuse_dir(int is_set, const char *dir, int error) {
  if (is_set)
    refuse("NCCLSHIM_RECORD_DIR", dir, error == ENOTDIR ? "not a directory" : strerror(error));
  else
    ncs_rec_say("NCCLSHIM_RECORD_DIR is unset and the working directory cannot take dumps", "",
                "; the recorder stays off", error);
}

/* The dump directory, opened once: dumps are created relative to it. It is opened as given
 * (the working directory, unset), so that one deeper than PATH_MAX is usable too; its full
 * name is only for messages. */
static int open_dir(rec_state *r) {
  const char *given = secure_getenv("NCCLSHIM_RECORD_DIR");
  int is_set = given != NULL && given[0] != '\0';
  const char *dir = is_set ? given : ".";
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || faccessat(fd, ".", W_OK, 0) != 0) {
    refuse_dir(is_set, dir, errno);
    if (fd >= 0) close(fd);
    return 0;
  }
  /* Writable in name is not enough (/sys passes access(W_OK) as root, then refuses every
   * file): a file is made and removed once. */
  char probe[64];
  snprintf(probe, sizeof(probe), ".ncclshim-record-check-%d.tmp", (int)getpid());
  int made = openat(fd, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (made < 0 && errno != EEXIST) {
    refuse_dir(is_set, dir, errno);
    close(fd);
    return 0;
  }
  if (made >= 0) {
    close(made);
    unlinkat(fd, probe, 0);
  }
  r->dir_fd = fd;
  r->dir_dev = st.st_dev;
  r->dir_ino = st.st_ino;
  char resolved[PATH_MAX];
  if (realpath(dir, resolved) != NULL)
    snprintf(r->dir, sizeof(r->dir), "%s", resolved);
  else /* a name longer than PATH_MAX: said as given */
    snprintf(r->dir, sizeof(r->dir), "%s", is_set ? dir : "(the working directory)");
  return 1;
}

/* NCCLSHIM_RECORD_HANG_MS: 0 when unset or blank, -1 when refused; blanks around the number
 * are ignored, as NCCLSHIM_RECORD's are. */
static int parse_hang_ms(void) {
  const char *value = secure_getenv("NCCLSHIM_RECORD_HANG_MS");
  if (value == NULL) return 0;
  char text[64];
  int fits = trimmed(value, text, sizeof(text));
  if (fits && text[0] == '\0') return 0;
  char *end;
  errno = 0;
  long ms = strtol(text, &end, 10);
  if (fits && errno == 0 && end != text && *end == '\0' && ms >= 1 && ms <= MAX_HANG_MS)
    return (int)ms;
  refuse("NCCLSHIM_RECORD_HANG_MS", value, "not a number of milliseconds from 1 to 86400000");
  return -1;
}

static rec_state *make_state(const char *calls_text) {
  char *end;
  errno = 0;
  unsigned long long calls = strtoull(calls_text, &end, 10);
  if (errno != 0 || end == calls_text || *end != '\0' || calls_text[0] == '-' || calls < 1 ||
      calls > MAX_CALLS) {
    refuse("NCCLSHIM_RECORD", calls_text, "not a number of calls from 1 to 16777216");
    return NULL;
  }
  /* Blanks around the name are ignored, and blanks alone are unset, as for the numbers. */
  const char *signal_text = secure_getenv("NCCLSHIM_RECORD_SIGNAL");
  char signal_name[64];
  int signo = 0;
  if (signal_text != NULL &&
      (!trimmed(signal_text, signal_name, sizeof(signal_name)) ||
       (signal_name[0] != '\0' && (signo = parse_signal(signal_name)) == 0))) {
    refuse("NCCLSHIM_RECORD_SIGNAL", signal_text,
           "not a signal name (USR1, TERM, ...) or number that can be caught and is not "
           "SIGABRT (always dumped on) or SIGCHLD");
    return NULL;
  }
  int hang_ms = parse_hang_ms();
  if (hang_ms < 0) return NULL;
  uint64_t slots = 1;
  while (slots < calls) slots <<= 1;
  rec_state *r = calloc(1, sizeof(*r));
  /* Pages of zeros, touched only as calls fill them. */
  size_t bytes = (size_t)slots * sizeof(rec_entry);
  void *entries = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == NULL || entries == MAP_FAILED || !ncs_rec_comms_init(r)) {
    free(r);
    if (entries != MAP_FAILED) munmap(entries, bytes);
    refuse("NCCLSHIM_RECORD", calls_text, "out of memory");
    return NULL;
  }
  if (!open_dir(r)) {
    munmap(entries, bytes);
    free(r);
    return NULL;
  }
  r->entries = entries;
  r->ring_bytes = bytes;
  r->mask = slots - 1;
  r->capacity = calls;
  r->signal = signo;
  r->at_exit = ncs_env_flag("NCCLSHIM_RECORD_AT_EXIT");
  r->hang_ms = hang_ms;
  atomic_store(&r->process_rank, NCCLSHIM_REC_NONE);
  atomic_store(&r->nccl_version, NCCLSHIM_REC_NONE); /* not asked of NCCL in audit mode */
  ncs_rec_identity(r);
  return r;
}

void ncs_rec_in_child(void) {
  if (ncs_rec == NULL) return;
  ncs_rec_comms_reset(ncs_rec);
  ncs_rec_hang_forked();
  ncs_rec_thread_forked();
  ncs_rec_forked(ncs_rec);
  atomic_flag_clear(&ncs_rec->busy);
}

/* At load: a signal that arrives before the first NCCL call (a launcher's, or a rank hung in
 * its setup) dumps instead of killing the process. */
__attribute__((constructor)) static void start_at_load(void) {
  const char *value = secure_getenv("NCCLSHIM_RECORD");
  if (value == NULL) return;
  char calls[64];
  if (!trimmed(value, calls, sizeof(calls))) {
    refuse("NCCLSHIM_RECORD", value, "not a number of calls from 1 to 16777216");
    return;
  }
  if (calls[0] == '\0') return;
  rec_state *r = make_state(calls);
  if (r == NULL) return;
  ncs_rec = r;
  pthread_atfork(NULL, NULL, ncs_rec_in_child);
  if (r->signal != 0) install(0, r->signal);
  if (r->signal != 0 && !installed[0]) {
    char number[16];
    snprintf(number, sizeof(number), "%d", r->signal);
    ncs_rec_say("NCCLSHIM_RECORD_SIGNAL=", number, ": sigaction refused it; no dump on that signal",
                errno);
  }
  install(1, SIGABRT);
}

int ncs_rec_attach(int nccl_version) {
  if (ncs_rec == NULL) return 0;
  atomic_store(&ncs_rec->nccl_version, nccl_version);
  return 1;
}

const ncclshim_nccl_table *ncs_rec_audit_table(const ncclshim_nccl_table *real) {
  return ncs_rec != NULL ? ncs_rec_table(real) : NULL;
}

/* Off: the signals get their previous actions back. */
static int turn_off(void) {
  rec_state *r = ncs_rec;
  if (r == NULL) return 0;
  if (r->signal != 0) uninstall(0, r->signal);
  uninstall(1, SIGABRT);
  ncs_rec = NULL; /* the state stays allocated: a handler may still be reading it */
  return 1;
}

void ncs_rec_no_nccl(void) {
  if (turn_off()) ncs_rec_say("no usable NCCL", "", ": the recorder is off", 0);
}

void ncs_rec_hand_over(void) { turn_off(); }

void ncs_rec_describe(char *text, size_t size) {
  const rec_state *r = ncs_rec;
  if (r == NULL) {
    snprintf(text, size, "off (NCCLSHIM_RECORD unset or refused)");
    return;
  }
  int used = snprintf(text, size,
                      "recording the last %llu calls; dumped to %s/ncclshim-record-%s-%d-*.jsonl "
                      "when a call fails, an asynchronous error is reported, a communicator is "
                      "aborted or on SIGABRT",
                      (unsigned long long)r->capacity, r->dir, r->host, (int)getpid());
  if (used > 0 && (size_t)used < size && r->signal != 0)
    used += snprintf(text + used, size - (size_t)used, ", on signal %d", r->signal);
  if (used > 0 && (size_t)used < size && r->at_exit)
    used += snprintf(text + used, size - (size_t)used, ", at exit");
  if (used > 0 && (size_t)used < size && r->hang_ms != 0)
    snprintf(text + used, size - (size_t)used,
             ", and once when an operation has not completed after %d ms (if the program loads "
             "a CUDA driver: without one, its first operation says there is no hang dump)",
             r->hang_ms);
}

/* At exit, only a process that recorded a call: under LD_PRELOAD or LD_AUDIT, every program
 * a job starts (shells, launchers) loads the library too. At exit or at dlclose, the signals
 * get their previous actions back: a handler left behind a dlclose would be unmapped code. */
__attribute__((destructor)) static void dump_at_exit(void) {
  rec_state *r = ncs_rec;
  /* A child the fork handler did not reach (a vfork child that calls exit()) shares or copies
   * its parent's state: it recorded none of those calls, and changes nothing. */
  if (r == NULL || getpid() != r->pid) return;
  if (r->at_exit && atomic_load(&r->next) > atomic_load(&r->first))
    ncs_rec_dump("exit", -1, NCCLSHIM_REC_NONE);
  if (r->signal != 0) uninstall(0, r->signal);
  uninstall(1, SIGABRT);
}
