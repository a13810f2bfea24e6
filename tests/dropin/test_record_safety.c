/* The flight recorder as a hostile user or a real job meets it: dumps that never follow a
 * link, open a FIFO or show an address; a full disk that keeps the previous dump; a fork;
 * splits with NCCL_SPLIT_NOCOLOR; dumps with no signal (ncclCommAbort, SIGABRT); the rate
 * limit; signals before the first call; settings read strictly; thousands of communicators;
 * audit mode over a program that binds NCCL with dlsym. */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dropin_tests.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static int lines(const char *text, const char *a, const char *b, const char *c) {
  const char *needles[] = {a, b, c, NULL};
  return count_lines(text, needles);
}

/* Run the interposed program recording into `dir` (a fresh one when NULL). */
static char *run_in(scenario *s, char *dir, const char *const *args, const char *a, const char *b) {
  if (dir == NULL) dir = scratch_dir();
  const char *env[] = {"NCCLSHIM_RECORD=100", env_entry("NCCLSHIM_RECORD_DIR", dir), a, b, NULL};
  run_interposed(s, 1, args, env);
  return dir;
}

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.' || e->d_name[1] > '.';
  closedir(d);
  return n;
}

/* Names planted where the old recorder wrote (a link to a victim, a FIFO) are left alone:
 * the dump is a new 0600 file, and shows ids, never the communicator's address. */
static void test_safe_files(void **state) {
  (void)state;
  char *dir = scratch_dir(), *victim = join(dir, "victim");
  FILE *f = fopen(victim, "w");
  fputs("precious\n", f);
  fclose(f);
  char planted[4096];
  for (int pid = 0; pid < 2; pid++) { /* whatever pid: the dump's name is not guessable */
    snprintf(planted, sizeof(planted), "%s/ncclshim-record-x-%d-rank0.jsonl.tmp", dir, pid);
    assert_int_equal(symlink(victim, planted), 0);
  }
  snprintf(planted, sizeof(planted), "%s/fifo.jsonl.tmp", dir);
  assert_int_equal(mkfifo(planted, 0600), 0);
  scenario s;
  const char *args[] = {"signal", NULL};
  run_in(&s, dir, args, "NCCLSHIM_RECORD_SIGNAL=USR1", NULL);
  assert_int_equal(s.exit_code, 0);
  char *victim_text = NULL;
  f = fopen(victim, "r");
  char buf[64] = "";
  assert_non_null(fgets(buf, sizeof(buf), f));
  fclose(f);
  assert_string_equal(buf, "precious\n");
  free(victim_text);
  /* One dump more than what was planted, regular, 0600, and no temporary file left. */
  assert_int_equal(entries(dir), 5);
  char *name = NULL, *dump = NULL;
  int found = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, "-rank0-") != NULL) {
      name = join(dir, e->d_name);
      found++;
    }
  closedir(d);
  assert_int_equal(found, 1);
  struct stat st;
  assert_int_equal(lstat(name, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0600);
  f = fopen(name, "r");
  static char text[1 << 16];
  text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
  fclose(f);
  dump = text;
  const char *pointer = scenario_get(&s, "comm_pointer");
  assert_true(strlen(pointer) >= 4);
  if (strstr(dump, pointer) != NULL) fail_msg("the address %s is in the dump:\n%s", pointer, dump);
  assert_null(strstr(dump, "\"0x"));
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"comm\":\"c-", ""), 1);
  assert_int_equal(lines(dump, "\"kind\":\"header\"", "\"process\":\"", "\"boot_id\":\""), 1);
  free(name);
}

/* A write that fails (the file size limit stands for a full disk): no "wrote", the error
 * named, the previous dump kept whole, no temporary file left behind. */
static void test_full_disk(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"fulldisk", NULL};
  char *dir = run_in(&s, NULL, args, "NCCLSHIM_RECORD_SIGNAL=USR1", NULL);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "limit"), "0");
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote", "", ""), 1);
  assert_int_equal(lines(s.output, "ncclshim recorder: cannot write a dump in ",
                         "(the previous dump is kept): file too large", ""),
                   1);
  assert_int_equal(entries(dir), 1);
  char *dump = read_dump(dir, NULL);
  assert_int_equal(lines(dump, "\"seq\":2,", "", ""), 1);
  assert_int_equal(lines(dump, "\"seq\":3,", "", ""), 0);
  free(dump);
}

/* A forked child (a data-loader worker the job's signal reaches too) writes its own dump,
 * marked as a fork's, with none of its parent's calls or communicators. */
static void test_fork(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"fork", NULL};
  char *dir = run_in(&s, NULL, args, "NCCLSHIM_RECORD_SIGNAL=USR1", NULL);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "child_status"), "0");
  assert_int_equal(dump_count(dir), 2);
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote", "-rank0-", ""), 1);
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote", "-norank-", ""), 1);
  char all[1 << 15] = "";
  DIR *d = opendir(dir);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char *path = join(dir, e->d_name);
    FILE *f = fopen(path, "r");
    size_t used = strlen(all);
    all[used + fread(all + used, 1, sizeof(all) - 1 - used, f)] = '\0';
    fclose(f);
    free(path);
  }
  closedir(d);
  assert_int_equal(lines(all, "\"kind\":\"header\"", "\"forked\":true,\"parent_process\":", ""), 1);
  assert_int_equal(lines(all, "\"kind\":\"header\"", "\"forked\"", "\"calls\":0,"), 1);
  assert_int_equal(lines(all, "\"kind\":\"comm\"", "", ""), 1); /* the parent's only */
  assert_int_equal(lines(all, "\"kind\":\"call\"", "", ""), 3);
}

static char *comm_line_id(const char *dump, int nth) {
  const char *line = dump;
  for (int seen = 0;; line++) {
    line = strstr(line, "\"kind\":\"comm\"");
    assert_non_null(line);
    if (strstr(line, "\"created_by\":\"ncclCommSplit\"") == NULL) continue;
    if (seen++ == nth) break;
  }
  const char *id = strstr(line, "\"comm_id\":\"");
  assert_non_null(id);
  return strndup(id, 11 + 16);
}

/* Rank 0 opts out of a first split: the second split's communicator has one id on both. */
static void test_split_nocolor(void **state) {
  (void)state;
  scenario s;
  const char *zero[] = {"nocolor", "0", NULL}, *one[] = {"nocolor", "1", NULL};
  char *dir0 = run_in(&s, NULL, zero, "NCCLSHIM_RECORD_AT_EXIT=1", NULL);
  assert_string_equal(scenario_get(&s, "first_result"), "0");
  char *dir1 = run_in(&s, NULL, one, "NCCLSHIM_RECORD_AT_EXIT=1", NULL);
  char *dump0 = read_dump(dir0, NULL), *dump1 = read_dump(dir1, NULL);
  /* Rank 0 made one split communicator, rank 1 two. */
  assert_int_equal(lines(dump0, "\"kind\":\"comm\"", "ncclCommSplit", ""), 1);
  assert_int_equal(lines(dump1, "\"kind\":\"comm\"", "ncclCommSplit", ""), 2);
  char *id0 = comm_line_id(dump0, 0), *first1 = comm_line_id(dump1, 0),
       *second1 = comm_line_id(dump1, 1);
  int same = strcmp(id0, first1) == 0 || strcmp(id0, second1) == 0;
  if (!same) fail_msg("rank 0's %s is neither of rank 1's %s, %s", id0, first1, second1);
  assert_int_equal(lines(dump0, id0, "\"last_seq\":2,", ""), 1);
  free(id0), free(first1), free(second1), free(dump0), free(dump1);
}

/* A communicator given up (PyTorch's watchdog) and abort(): dumps with no signal sent. */
static void test_dump_without_signal(void **state) {
  (void)state;
  scenario s;
  const char *comm_abort[] = {"commabort", NULL};
  char *dump = read_dump(run_in(&s, NULL, comm_abort, NULL, NULL), NULL);
  assert_string_equal(scenario_get(&s, "abort_result"), "0");
  assert_int_equal(
      lines(dump, "\"kind\":\"header\"", "\"reason\":\"abort\"", "\"function\":\"ncclCommAbort\""),
      1);
  assert_int_equal(lines(dump, "\"function\":\"ncclCommAbort\"", "\"state\":\"pending\"", ""), 1);
  free(dump);
  const char *abort_args[] = {"abort", NULL};
  dump = read_dump(run_in(&s, NULL, abort_args, NULL, NULL), NULL);
  assert_int_equal(s.exit_code, 128 + SIGABRT);
  char expected[64];
  snprintf(expected, sizeof(expected), "\"reason\":\"signal\",\"signal\":%d,", SIGABRT);
  assert_int_equal(lines(dump, expected, "", ""), 1);
  assert_int_equal(lines(dump, "\"seq\":2,", "", ""), 1);
  free(dump);
}

/* 50 failing calls: one dump; a call failing with another code: a second, which counts the
 * 49 left out. */
static void test_rate_limit(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"errors", "50", NULL};
  char *dump = read_dump(run_in(&s, NULL, args, NULL, NULL), NULL);
  assert_string_equal(scenario_get(&s, "other_result"), "5");
  assert_int_equal(lines(s.output, "ncclshim recorder: wrote", "", ""), 2);
  assert_int_equal(lines(dump, "\"kind\":\"header\"", "\"result\":5,", "\"suppressed_dumps\":49,"),
                   1);
  free(dump);
}

/* The handler is there from the start: the dump signal before any NCCL call dumps. With the
 * recorder off, no action changes; on, SIGABRT's and the dump signal's do. */
static void test_signals(void **state) {
  (void)state;
  scenario s;
  const char *early[] = {"early", NULL};
  char *dir = run_in(&s, NULL, early, "NCCLSHIM_RECORD_SIGNAL=USR1", NULL);
  assert_string_equal(scenario_get(&s, "alive"), "1");
  assert_int_equal(dump_count(dir), 1);

  const char *actions[] = {"actions", NULL};
  const char *off[] = {"NCCLSHIM_RECORD_SIGNAL=USR1", NULL};
  run_interposed(&s, 1, actions, off);
  assert_string_equal(scenario_get(&s, "usr1_default"), "1");
  assert_string_equal(scenario_get(&s, "abrt_default"), "1");
  run_in(&s, NULL, actions, "NCCLSHIM_RECORD_SIGNAL=USR1", NULL);
  assert_string_equal(scenario_get(&s, "usr1_default"), "0");
  assert_string_equal(scenario_get(&s, "abrt_default"), "0");

  /* A real-time dump signal dumps, then does what it does by default: end the process. */
  char number[16], setting[64];
  snprintf(number, sizeof(number), "%d", SIGRTMIN + 2);
  snprintf(setting, sizeof(setting), "NCCLSHIM_RECORD_SIGNAL=%d", SIGRTMIN + 2);
  const char *raise_rt[] = {"raise", number, NULL};
  dir = run_in(&s, NULL, raise_rt, setting, NULL);
  assert_int_equal(s.exit_code, 128 + SIGRTMIN + 2);
  assert_string_equal(scenario_get(&s, "alive"), "");
  assert_int_equal(dump_count(dir), 1);
}

/* NCCLSHIM_RECORD=' 5' and '5 ' are 5; SIGCHLD is refused by number as by name; messages
 * show control characters escaped. */
static void test_settings(void **state) {
  (void)state;
  const char *values[] = {"NCCLSHIM_RECORD= 5", "NCCLSHIM_RECORD=5 "};
  for (int i = 0; i < 2; i++) {
    scenario s;
    char *dir = scratch_dir();
    const char *args[] = {"ops", "0", "8", NULL};
    const char *env[] = {values[i], env_entry("NCCLSHIM_RECORD_DIR", dir),
                         "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
    run_interposed(&s, 1, args, env);
    char *dump = read_dump(dir, NULL);
    assert_int_equal(lines(dump, "\"capacity\":5,", "", ""), 1);
    assert_int_equal(lines(dump, "\"kind\":\"call\"", "", ""), 5);
    free(dump);
  }
  char chld[64];
  snprintf(chld, sizeof(chld), "NCCLSHIM_RECORD_SIGNAL=%d", SIGCHLD);
  const char *refused[] = {chld, "NCCLSHIM_RECORD_SIGNAL=CHLD", "NCCLSHIM_RECORD_SIGNAL=ABRT"};
  for (int i = 0; i < 3; i++) {
    scenario s;
    const char *args[] = {"error", NULL};
    char *dir = run_in(&s, NULL, args, refused[i], NULL);
    if (lines(s.output, refused[i], ": not a signal name", "the recorder stays off") != 1)
      fail_msg("%s not refused:\n%s", refused[i], s.output);
    assert_int_equal(dump_count(dir), 0);
  }
  scenario s;
  const char *args[] = {"error", NULL};
  const char *env[] = {"NCCLSHIM_RECORD=10", "NCCLSHIM_RECORD_DIR=/nonexistent/\033[31mred", NULL};
  run_interposed(&s, 1, args, env);
  assert_null(strchr(s.output, '\033'));
  assert_int_equal(lines(s.output, "NCCLSHIM_RECORD_DIR=/nonexistent/\\x1b[31mred: ", "", ""), 1);
  /* A file where a directory belongs is refused at start. */
  char *file = join(scratch_dir(), "not-a-dir");
  fclose(fopen(file, "w"));
  const char *file_env[] = {"NCCLSHIM_RECORD=10", env_entry("NCCLSHIM_RECORD_DIR", file), NULL};
  run_interposed(&s, 1, args, file_env);
  assert_int_equal(lines(s.output, "NCCLSHIM_RECORD_DIR=",
                         ": not a directory; the recorder "
                         "stays off",
                         ""),
                   1);
  free(file);
  /* No NCCL: the recorder turns itself off, and says so on stderr. */
  char *dir = scratch_dir();
  const char *none[] = {"NCCLSHIM_RECORD=10", env_entry("NCCLSHIM_RECORD_DIR", dir),
                        "NCCLSHIM_NCCL_LIBRARY=/nonexistent/libnccl.so.2",
                        "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_captured(&s, getenv("DROPIN_USER"), NULL, none);
  assert_string_equal(scenario_get(&s, "allreduce_result"), "2");
  assert_int_equal(
      lines(s.output, "ncclshim recorder: no usable NCCL: the recorder is off", "", ""), 1);
  assert_int_equal(dump_count(dir), 0);
}

/* 5000 communicators alive at once (the old table held 4096), then every other one
 * destroyed: each has its id and sequence, the destroyed ones leave the dump but the last
 * 64 to end. */
static void test_many_communicators(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"many", "5000", NULL};
  char *dir = run_in(&s, NULL, args, "NCCLSHIM_RECORD_AT_EXIT=1", NULL);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "init_failed"), "");
  char *dump = read_dump(dir, NULL);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"last_seq\":1,", "\"comm_id\":\""),
                   2500 + 64);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"ended_by\":\"ncclCommDestroy\"", ""), 64);
  assert_int_equal(lines(dump, "\"comm_id\":null", "", ""), 0);
  free(dump);
}

/* Threads making and ending communicators while dumps are written: the last dump holds
 * each thread's last communicator with its 10 operations, and every call its id. */
static void test_threads(void **state) {
  (void)state;
  scenario s;
  const char *args[] = {"threads", NULL};
  char *dir = scratch_dir();
  const char *env[] = {"NCCLSHIM_RECORD=20000", env_entry("NCCLSHIM_RECORD_DIR", dir),
                       "NCCLSHIM_RECORD_SIGNAL=USR1", NULL};
  run_interposed(&s, 1, args, env);
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "threads_failed"), "0");
  char *dump = read_dump(dir, NULL);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"last_seq\":10,", "\"comm_id\":\""), 8 + 64);
  assert_int_equal(lines(dump, "\"kind\":\"comm\"", "\"ended_by\"", ""), 64);
  assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", "\"comm_id\":\"", "\"seq\":"),
                   8 * 100 * 10);
  assert_int_equal(lines(dump, "\"comm_id\":null", "", ""), 0);
  free(dump);
}

/* Audit mode: a program that dlopens NCCL and binds it with dlsym is recorded. */
static void test_audit_dlsym(void **state) {
  (void)state;
#ifdef SANITIZED
  skip(); /* an auditor's namespace would get a second copy of the sanitizer's runtime */
#endif
  const char *library = getenv("UNDER_NCCL");
  char *dirs[2];
  for (int rank = 0; rank < 2; rank++) {
    scenario s;
    dirs[rank] = scratch_dir();
    char r[2] = {(char)('0' + rank), '\0'};
    const char *args[] = {library, "ops", r, rank == 0 ? "4" : "3", NULL};
    const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")),
                         "NCCLSHIM_RECORD=100",
                         env_entry("NCCLSHIM_RECORD_DIR", dirs[rank]),
                         "NCCLSHIM_RECORD_AT_EXIT=1",
                         "NCCLSHIM_DEBUG=1",
                         NULL};
    run_captured(&s, getenv("AUDIT_USER"), args, env);
    assert_int_equal(s.exit_code, 0);
    assert_non_null(strstr(scenario_get(&s, "ncclAllReduce_in"), "libncclshim-nccl.so"));
    assert_int_equal(lines(s.output, "ncclshim recorder: audit mode: NCCL mapped: ", library, ""),
                     1);
    char *dump = read_dump(dirs[rank], NULL);
    assert_int_equal(lines(dump, "\"function\":\"ncclAllReduce\"", "\"state\":\"returned\"", ""),
                     rank == 0 ? 4 : 3);
    char key[32];
    snprintf(key, sizeof(key), "\"rank\":%d,\"nranks\":2,", rank);
    assert_int_equal(lines(dump, "\"kind\":\"comm\"", key, ""), 1);
    free(dump);
  }
  /* The split that one rank opts out of is seen too (the NOCOLOR call counts). */
  scenario s;
  char *dir = scratch_dir();
  const char *args[] = {library, "split", NULL};
  const char *env[] = {env_entry("LD_AUDIT", getenv("DROPIN_LIBRARY")), "NCCLSHIM_RECORD=100",
                       env_entry("NCCLSHIM_RECORD_DIR", dir), "NCCLSHIM_RECORD_AT_EXIT=1", NULL};
  run_captured(&s, getenv("AUDIT_USER"), args, env);
  assert_string_equal(scenario_get(&s, "split_result"), "0");
  char *dump = read_dump(dir, NULL);
  assert_int_equal(lines(dump, "\"function\":\"ncclCommSplit\"", "", ""), 2);
  assert_int_equal(
      lines(dump, "\"kind\":\"comm\"", "\"created_by\":\"ncclCommSplit\"", "\"last_seq\":1,"), 1);
  free(dump);
}

int run_record_safety_tests(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_safe_files),
      cmocka_unit_test(test_full_disk),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_split_nocolor),
      cmocka_unit_test(test_dump_without_signal),
      cmocka_unit_test(test_rate_limit),
      cmocka_unit_test(test_signals),
      cmocka_unit_test(test_settings),
      cmocka_unit_test(test_many_communicators),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_audit_dlsym),
  };
  return cmocka_run_group_tests_name("recorder safety", tests, NULL, NULL);
}
