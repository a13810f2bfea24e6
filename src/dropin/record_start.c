/* Turning the recorder on: NCCLSHIM_RECORD=N (the last N calls), NCCLSHIM_RECORD_DIR (where
 * dumps go; the working directory by default), NCCLSHIM_RECORD_SIGNAL (a signal that dumps)
 * and NCCLSHIM_RECORD_AT_EXIT (dump at exit). A bad value leaves the recorder off, with a
 * message naming it; the program runs on either way. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "record.h"
#include "record_state.h"

enum { MAX_CALLS = 1 << 24 };

static struct sigaction previous;

static void refuse(const char *variable, const char *value, const char *why) {
  fprintf(stderr, "ncclshim recorder: %s=%s: %s; the recorder stays off\n", variable, value, why);
}

/* "USR1", "SIGUSR1" or a number; 0 when unusable. */
static int parse_signal(const char *text) {
  static const struct {
    const char *name;
    int number;
  } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},    {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
               {"USR2", SIGUSR2}, {"TERM", SIGTERM},  {"ALRM", SIGALRM}, {"CONT", SIGCONT},
               {"PWR", SIGPWR},   {"WINCH", SIGWINCH}};
  const char *name = strncasecmp(text, "SIG", 3) == 0 ? text + 3 : text;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcasecmp(name, names[i].name) == 0) return names[i].number;
  char *end;
  errno = 0;
  long number = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || number < 1 || number > SIGRTMAX ||
      number == SIGKILL || number == SIGSTOP || number == SIGSEGV || number == SIGBUS ||
      number == SIGFPE || number == SIGILL)
    return 0;
  return (int)number;
}

/* Dump, then let the signal do what it did before: call the previous handler; for a signal
 * whose default ends the process (TERM, INT, ...) end it; USR1, USR2 and the rest go on. */
static void on_signal(int signo, siginfo_t *info, void *context) {
  ncclshim_rec_dump("signal", -1, signo);
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != NULL) previous.sa_sigaction(signo, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
  } else if (previous.sa_handler == SIG_DFL && signo != SIGUSR1 && signo != SIGUSR2 &&
             signo != SIGCONT && signo != SIGWINCH && signo < SIGRTMIN) {
    signal(signo, SIG_DFL);
    raise(signo);
  }
}

static int is_on(const char *value) {
  return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

/* The host name as it goes into a file name: [A-Za-z0-9._-] only. */
static void host_name(char *host, size_t size) {
  struct utsname u;
  snprintf(host, size, "%s", uname(&u) == 0 && u.nodename[0] ? u.nodename : "unknown");
  for (char *p = host; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '-' || *p == '_'))
      *p = '_';
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
  const char *dir = secure_getenv("NCCLSHIM_RECORD_DIR");
  if (dir == NULL || dir[0] == '\0') dir = ".";
  char resolved[PATH_MAX];
  if (realpath(dir, resolved) == NULL || access(resolved, W_OK) != 0) {
    refuse("NCCLSHIM_RECORD_DIR", dir, strerror(errno));
    return NULL;
  }
  /* Room for "/ncclshim-record-HOST-PID-rankR.jsonl.tmp" after it. */
  if (strlen(resolved) > PATH_MAX - 160) {
    refuse("NCCLSHIM_RECORD_DIR", dir, "too long for the dump's file name");
    return NULL;
  }
  const char *signal_text = secure_getenv("NCCLSHIM_RECORD_SIGNAL");
  int signo = 0;
  if (signal_text != NULL && signal_text[0] != '\0' && (signo = parse_signal(signal_text)) == 0) {
    refuse("NCCLSHIM_RECORD_SIGNAL", signal_text,
           "not a signal name (USR1, TERM, ...) or number that can be caught");
    return NULL;
  }
  uint64_t slots = 1;
  while (slots < calls) slots <<= 1;
  rec_state *r = calloc(1, sizeof(*r));
  rec_entry *entries = calloc(slots, sizeof(*entries));
  if (r == NULL || entries == NULL) {
    free(r);
    free(entries);
    refuse("NCCLSHIM_RECORD", calls_text, "out of memory");
    return NULL;
  }
  r->entries = entries;
  r->mask = slots - 1;
  r->capacity = calls;
  r->signal = signo;
  r->at_exit = is_on(secure_getenv("NCCLSHIM_RECORD_AT_EXIT"));
  atomic_store(&r->process_rank, NCCLSHIM_REC_NONE);
  snprintf(r->dir, sizeof(r->dir), "%s", resolved);
  host_name(r->host, sizeof(r->host));
  return r;
}

int ncclshim_rec_start(int nccl_version) {
  const char *calls = secure_getenv("NCCLSHIM_RECORD");
  if (calls == NULL || calls[0] == '\0') return 0;
  rec_state *r = make_state(calls);
  if (r == NULL) return 0;
  r->nccl_version = nccl_version;
  ncclshim_rec = r;
  if (r->signal != 0) {
    struct sigaction action = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&action.sa_mask);
    sigaction(r->signal, &action, &previous);
  }
  return 1;
}

void ncclshim_rec_describe(char *text, size_t size) {
  const rec_state *r = ncclshim_rec;
  if (r == NULL) {
    snprintf(text, size, "off");
    return;
  }
  int used = snprintf(text, size,
                      "the last %llu calls; dumped to %s/ncclshim-record-%s-%d-*.jsonl "
                      "when a call fails or an asynchronous error is reported",
                      (unsigned long long)r->capacity, r->dir, r->host, (int)getpid());
  if (used > 0 && (size_t)used < size && r->signal != 0)
    used += snprintf(text + used, size - (size_t)used, ", on signal %d", r->signal);
  if (used > 0 && (size_t)used < size && r->at_exit)
    snprintf(text + used, size - (size_t)used, ", at exit");
}

__attribute__((destructor)) static void dump_at_exit(void) {
  if (ncclshim_rec != NULL && ncclshim_rec->at_exit)
    ncclshim_rec_dump("exit", -1, NCCLSHIM_REC_NONE);
}
