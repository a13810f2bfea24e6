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

#include "record_case.h"

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
  record_run(&s, &(record_case){.args = {"signal"},
                                .env = {DUMP_ON_USR1, env_entry("NCCLSHIM_RECORD_DIR", dir)}});
  assert_int_equal(s.exit_code, 0);
  f = fopen(victim, "r");
  char buf[64] = "";
  assert_non_null(fgets(buf, sizeof(buf), f));
  fclose(f);
  assert_string_equal(buf, "precious\n");
  /* One dump more than what was planted, regular, 0600, and no temporary file left. */
  assert_int_equal(dir_entries(dir), 5);
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
  const line_count ids[] = {{{COMM_LINE, "\"comm\":\"c-"}, 1},
                            {{HEADER_LINE, "\"process\":\"", "\"boot_id\":\""}, 1}};
  EXPECT_LINES(dump, ids);
  free(name);
}

/* A write that fails (the file size limit stands for a full disk): no "wrote", the error
 * named, the previous dump kept whole, no temporary file left behind. */
static const record_case test_full_disk = {
    .args = {"fulldisk"},
    .env = {DUMP_ON_USR1},
    .values = {{"limit", "0"}},
    .output = {{{"ncclshim recorder: wrote"}, 1},
               {{"ncclshim recorder: cannot write a dump in ",
                 "(the previous dump is kept): file too large"},
                1}},
    .dump = {{{"\"seq\":2,"}, 1}, {{"\"seq\":3,"}, 0}},
    .entries = 1,
};

/* A forked child (a data-loader worker the job's signal reaches too) writes its own dump,
 * marked as a fork's, with none of its parent's calls or communicators. */
static void test_fork(void **state) {
  (void)state;
  scenario s;
  const char *dir = record_run(&s, &(record_case){.args = {"fork"}, .env = {DUMP_ON_USR1}});
  assert_int_equal(s.exit_code, 0);
  assert_string_equal(scenario_get(&s, "child_status"), "0");
  assert_int_equal(dump_count(dir), 2);
  const line_count wrote[] = {{{WROTE, "-rank0-"}, 1}, {{WROTE, "-norank-"}, 1}};
  EXPECT_LINES(s.output, wrote);
  char *all = all_dumps(dir);
  const line_count rows[] = {{{HEADER_LINE, "\"forked\":true,\"parent_process\":"}, 1},
                             {{HEADER_LINE, "\"forked\"", "\"calls\":0,"}, 1},
                             {{COMM_LINE}, 1}, /* the parent's only */
                             {{CALL_LINE}, 3}};
  EXPECT_LINES(all, rows);
  free(all);
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
  const char *dir0 = record_run(&s, &(record_case){.args = {"nocolor", "0"}, .env = {AT_EXIT}});
  assert_string_equal(scenario_get(&s, "first_result"), "0");
  const char *dir1 = record_run(&s, &(record_case){.args = {"nocolor", "1"}, .env = {AT_EXIT}});
  char *dump0 = read_dump(dir0, NULL), *dump1 = read_dump(dir1, NULL);
  /* Rank 0 made one split communicator, rank 1 two. */
  assert_int_equal(lines(dump0, COMM_LINE, "ncclCommSplit", ""), 1);
  assert_int_equal(lines(dump1, COMM_LINE, "ncclCommSplit", ""), 2);
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
  char *dump = read_dump(record_run(&s, &(record_case){.args = {"commabort"}}), NULL);
  assert_string_equal(scenario_get(&s, "abort_result"), "0");
  const line_count given_up[] = {
      {{HEADER_LINE, "\"reason\":\"abort\"", "\"function\":\"ncclCommAbort\""}, 1},
      {{"\"function\":\"ncclCommAbort\"", "\"state\":\"pending\""}, 1}};
  EXPECT_LINES(dump, given_up);
  free(dump);
  dump = read_dump(record_run(&s, &(record_case){.args = {"abort"}}), NULL);
  assert_int_equal(s.exit_code, 128 + SIGABRT);
  const line_count aborted[] = {{{"\"reason\":\"signal\",\"signal\":" NUMBER(SIGABRT) ","}, 1},
                                {{"\"seq\":2,"}, 1}};
  EXPECT_LINES(dump, aborted);
  free(dump);
}

/* 50 failing calls: one dump; a call failing with another code: a second, which counts the
 * 49 left out. */
static const record_case test_rate_limit = {
    .args = {"errors", "50"},
    .values = {{"other_result", "5"}},
    .output = {{{"ncclshim recorder: wrote"}, 2}},
    .dump = {{{HEADER_LINE, "\"result\":5,", "\"suppressed_dumps\":49,"}, 1}},
};

/* The handler is there from the start: the dump signal before any NCCL call dumps. With the
 * recorder off, no action changes; on, SIGABRT's and the dump signal's do. */
static void test_signals(void **state) {
  (void)state;
  scenario s;
  const char *dir = record_run(&s, &(record_case){.args = {"early"}, .env = {DUMP_ON_USR1}});
  assert_string_equal(scenario_get(&s, "alive"), "1");
  assert_int_equal(dump_count(dir), 1);

  const char *actions[] = {"actions", NULL}, *off[] = {DUMP_ON_USR1, NULL};
  run_interposed(&s, 1, actions, off);
  assert_string_equal(scenario_get(&s, "usr1_default"), "1");
  assert_string_equal(scenario_get(&s, "abrt_default"), "1");
  record_run(&s, &(record_case){.args = {"actions"}, .env = {DUMP_ON_USR1}});
  assert_string_equal(scenario_get(&s, "usr1_default"), "0");
  assert_string_equal(scenario_get(&s, "abrt_default"), "0");

  /* A real-time dump signal dumps, then does what it does by default: end the process. */
  char number[16], setting[64];
  snprintf(number, sizeof(number), "%d", SIGRTMIN + 2);
  snprintf(setting, sizeof(setting), "NCCLSHIM_RECORD_SIGNAL=%d", SIGRTMIN + 2);
  dir = record_run(&s, &(record_case){.args = {"raise", number}, .env = {setting}});
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
    const line_count five[] = {{{"\"capacity\":5,"}, 1}, {{CALL_LINE}, 5}};
    EXPECT_LINES(dump, five);
    free(dump);
  }
  char chld[64];
  snprintf(chld, sizeof(chld), "NCCLSHIM_RECORD_SIGNAL=%d", SIGCHLD);
  const char *refused[] = {chld, "NCCLSHIM_RECORD_SIGNAL=CHLD", "NCCLSHIM_RECORD_SIGNAL=ABRT"};
  for (int i = 0; i < 3; i++) {
    scenario s;
    const char *dir = record_run(&s, &(record_case){.args = {"error"}, .env = {refused[i]}});
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
  /* A byte that is not UTF-8 and a C1 control (CSI, U+009B) are escaped too. */
  const char *odd_env[] = {"NCCLSHIM_RECORD=10",
                           "NCCLSHIM_RECORD_DIR=/nonexistent/\xff\xc2\x9b"
                           "2J",
                           NULL};
  run_interposed(&s, 1, args, odd_env);
  assert_null(strstr(s.output, "\xc2\x9b"));
  assert_int_equal(lines(s.output, "NCCLSHIM_RECORD_DIR=/nonexistent/\\xff\\u009b2J: ", "", ""), 1);
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
static const record_case test_many_communicators = {
    .args = {"many", "5000"},
    .env = {AT_EXIT},
    .values = {{"init_failed", ""}},
    .dump = {{{COMM_LINE, "\"last_seq\":1,", "\"comm_id\":\""}, 2500 + 64},
             {{COMM_LINE, "\"ended_by\":\"ncclCommDestroy\""}, 64},
             {{"\"comm_id\":null"}, 0}},
};

/* Threads making and ending communicators while dumps are written: the last dump holds
 * each thread's last communicator with its 10 operations, and every call its id. */
static const record_case test_threads = {
    .args = {"threads"},
    .env = {"NCCLSHIM_RECORD=20000", DUMP_ON_USR1},
    .values = {{"threads_failed", "0"}},
    .dump = {{{COMM_LINE, "\"last_seq\":10,", "\"comm_id\":\""}, 8 + 64},
             {{COMM_LINE, "\"ended_by\""}, 64},
             {{"\"function\":\"ncclAllReduce\"", "\"comm_id\":\"", "\"seq\":"}, 8 * 100 * 10},
             {{"\"comm_id\":null"}, 0}},
};

/* Audit mode: a program that dlopens NCCL and binds it with dlsym is recorded. */
static void test_audit_dlsym(void **state) {
  (void)state;
  SKIP_UNDER_SANITIZER();
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
      RECORD_CASE_TEST(test_full_disk),
      cmocka_unit_test(test_fork),
      cmocka_unit_test(test_split_nocolor),
      cmocka_unit_test(test_dump_without_signal),
      RECORD_CASE_TEST(test_rate_limit),
      cmocka_unit_test(test_signals),
      cmocka_unit_test(test_settings),
      RECORD_CASE_TEST(test_many_communicators),
      RECORD_CASE_TEST(test_threads),
      cmocka_unit_test(test_audit_dlsym),
  };
  return cmocka_run_group_tests_name("recorder safety", tests, NULL, NULL);
}
