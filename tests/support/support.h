/* Helpers shared by the NCCL tests: where the fakes are, scratch files, and running a search
 * scenario in a fresh process with a controlled environment; the scenario helpers' argument
 * reader. The macros for cmocka tests (TABLE_CASE, EXPECT_VALUES) expand where cmocka.h is. */
#ifndef NCCLSHIM_TEST_SUPPORT_H
#define NCCLSHIM_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tests/fakes/fake_nccl.h"

/* Path of a fake variant ("2.28.9", "missing-required", ...); static storage per call site
 * is not needed: the result is malloc'd and never freed (tests are short-lived). */
char *fake_path(const char *variant);
/* The fake's record of its last call, through its own handle (it must already be loaded). */
const fake_nccl_call *fake_last_call(const char *path);
void fake_set_result(const char *path, int result);
int fake_version_calls(const char *path);

/* A fresh scratch directory (malloc'd path). */
char *scratch_dir(void);
/* Write `length` bytes of file `from` to `to` (all of it when length is (size_t)-1),
 * optionally overwriting the 2-byte ELF e_machine field with `machine` (0 = leave). */
void copy_file(const char *from, const char *to, size_t length, unsigned machine);
/* mkdir -p */
void make_dirs(const char *path);
/* Symlink `link` -> `target`, making the link's directory first. */
void make_link(const char *target, const char *link);
/* The directory `parent`/`name` (malloc'd), made, holding the symlink `file` -> `target`. */
char *dir_with_link(const char *parent, const char *name, const char *file, const char *target);
/* Print "<who>: <message>" to stderr and exit 99, meson's hard error: the test could not set
 * itself up, which is no verdict on the code under test. */
_Noreturn void test_die(const char *who, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* malloc'd "a/b" */
char *join(const char *a, const char *b);
/* malloc'd "KEY=value", for the environments given to run_program. */
char *env_entry(const char *key, const char *value);
/* The e_machine of the ELF file `path` (EM_X86_64, EM_AARCH64, ...), 0 when it is not a
 * readable ELF file. */
unsigned elf_machine(const char *path);
/* The e_machine of this test program: the architecture it was built for, whatever the machine
 * running it (under qemu-user, /proc/self/exe is the emulated program). */
unsigned own_machine(void);
/* An architecture's name for messages ("x86-64", "aarch64", "e_machine N" for others). */
const char *machine_name(unsigned machine);
/* A machine other than this program's, for the foreign-architecture cases: aarch64 for a test
 * built for x86-64, x86-64 for any other. */
unsigned foreign_machine(void);

/* How many times slower than native the test runs: NCCLSHIM_TEST_TIME_SCALE, which the
 * valgrind and qemu test setups set (tests/hardening/meson.build), else 1. Dies on a value
 * that is not a whole number from 1 to 100. */
int test_time_scale(void);
/* `ms` of slack for a timing window (how late a wait may end, how much CPU it may use),
 * times test_time_scale(): a window "within +10 %" of 300 ms is
 * `elapsed <= 300 + test_slack_ms(30)`. Lower bounds (never before the deadline) stay. */
int64_t test_slack_ms(int64_t ms);

/* A cmocka case named `name` (an identifier, as cmocka_unit_test names it) that runs the
 * table-driven `function` with *state = `row`: several named cases, one body. */
#define TABLE_CASE(name, function, row) \
  { #name, (function), NULL, NULL, (void *)(row) }

/* The address of `symbol` in the already loaded library `path`, or NULL with `why` saying which
 * of the two is missing; loaded_symbol dies instead. */
void *symbol_if_loaded(const char *path, const char *symbol, char *why, size_t size);
void *loaded_symbol(const char *path, const char *symbol);

/* The outcome of one search, as printed by the nccl_scenario helper (key=value lines). */
typedef struct scenario {
  int exit_code;
  char output[16384];
} scenario;

/* Run nccl_scenario (from $SCENARIO) with these arguments and exactly this environment
 * (NULL-terminated arrays), under ld.so --inhibit-cache so that the machine's ld.so cache cannot
 * supply an NCCL. In a cross build, ld.so (the target's) runs under the build's exe_wrapper,
 * which meson gives the tests in MESON_EXE_WRAPPER. */
void run_scenario(scenario *s, const char *const *args, const char *const *env);
/* The words of the cross build's exe_wrapper (MESON_EXE_WRAPPER, e.g. qemu-aarch64), which
 * every program of the target must be started through; 0 words in a native build. At most
 * `max`; the strings live until the next call. */
int test_wrapper_words(const char **words, int max);

/* The same with another helper program. */
void run_program(scenario *s, const char *program, const char *const *args, const char *const *env);
/* Wait for the child `pid` for `timeout_ms` at most, polling, then SIGKILL and reap it: 0, or 1
 * when it had to be killed, with its wait status in *status; -1 (errno set) if waitpid fails. */
int reap_child(pid_t pid, int timeout_ms, int *status);
/* Start argv[0] (found on PATH) with exactly envp, its stdout a pipe: 0 with *pid and
 * *read_fd (the pipe's read end, the caller's to close), or posix_spawnp's error (no pipe left
 * open). */
int spawn_piped(const char *const *argv, const char *const *envp, pid_t *pid, int *read_fd);
/* Read a started child's stdout from `fd` (then closed) into s->output and wait for `pid`,
 * filling s->exit_code (128 + signal for a killed child). */
void collect_output(scenario *s, int fd, pid_t pid);
/* The value of `key` in the scenario output, "" when absent (static buffer per call). */
const char *scenario_get(const scenario *s, const char *key);
/* NULL when each key of the NULL-ended list of key, value pairs has that value in the output,
 * else which one does not, with the output (a static buffer). */
const char *scenario_mismatch(const scenario *s, ...);
/* In a cmocka test: fail (at the caller's line) unless every key, value pair matches. */
#define EXPECT_VALUES(s, ...)                                          \
  do {                                                                 \
    const char *mismatch_ = scenario_mismatch((s), __VA_ARGS__, NULL); \
    if (mismatch_ != NULL) fail_msg("%s", mismatch_);                  \
  } while (0)
/* The first "attempt.<i>" line of the output that contains `needle`, "" when none does. */
const char *scenario_attempt(const scenario *s, const char *needle);

/* The scenario helpers' own side (nccl/nccl_scenario.c, cuda/cuda_scenario.c): one argument
 * each option takes, or none. */
typedef struct scenario_option {
  const char *name;   /* "--path" */
  const char **value; /* gets the argument after it; NULL: the option takes none */
  int *given;         /* set to 1 when the option is given; may be NULL */
} scenario_option;
/* Read the arguments against `options` (ended by a NULL name), and dlopen the file of every
 * helper's own --preload FILE at once: 0, or the helper's exit code: 2 after printing which
 * argument is unknown (or lacks its value) to stderr, 3 from scenario_preload. */
int scenario_options(int argc, char **argv, const scenario_option *options);

#endif
