/* Checks compat/glibc_start.c, linked in the same way as ncclshim-probe: the program's
 * constructor runs exactly once, before main, with main's arguments, and its destructor runs
 * at exit. main returns 1; only the destructor, after its own checks, makes the exit status 0,
 * so a destructor that never runs fails the test. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int constructor_runs;
static int constructor_argc;
static char **constructor_argv;
static int main_ran;

__attribute__((constructor)) static void count_constructor(int argc, char **argv, char **envp) {
  (void)envp;
  constructor_runs++;
  constructor_argc = argc;
  constructor_argv = argv;
}

__attribute__((destructor)) static void exit_from_destructor(void) {
  if (main_ran) _exit(0);
}

int main(int argc, char **argv) {
  if (constructor_runs != 1) {
    fprintf(stderr, "the constructor ran %d times before main, expected once\n", constructor_runs);
    return 1;
  }
  if (constructor_argc != argc || constructor_argv != argv || argc != 2 ||
      strcmp(argv[1], "start-check") != 0) {
    fprintf(stderr, "the constructor saw argc %d, main %d (argv[1] expected start-check)\n",
            constructor_argc, argc);
    return 1;
  }
  main_ran = 1;
  fflush(stdout);
  return 1;
}
