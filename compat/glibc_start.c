/* Program start that loads on glibc 2.17 (linked into ncclshim-probe with
 * -Wl,--wrap=__libc_start_main; see compat/glibc_baseline.h).
 *
 * The start file of glibc 2.34 and later (Scrt1.o) calls __libc_start_main@GLIBC_2.34, which
 * older glibc lacks, and passes no constructor callback, because the new __libc_start_main runs
 * the program's constructors itself. The wrapper calls the version glibc 2.17 has and passes
 * the callback that the older start file passed, which runs _init and the .init_array. Every
 * glibc treats a callback as the old convention and runs the constructors only through it, so
 * they run once on old and new glibc alike. The program's destructors are run by ld.so at exit
 * in both, as before. */
#include <stddef.h>

#if defined(__x86_64__)
#define NCCLSHIM_START_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define NCCLSHIM_START_VERSION "GLIBC_2.17"
#else
#error "glibc_start.c: no glibc 2.17 version of __libc_start_main known for this architecture"
#endif

typedef int (*ncclshim_main_fn)(int, char **, char **);
typedef void (*ncclshim_init_fn)(int, char **, char **);

extern int ncclshim_glibc_start_main(ncclshim_main_fn main, int argc, char **argv,
                                     ncclshim_init_fn init, void (*fini)(void),
                                     void (*rtld_fini)(void), void *stack_end);
__asm__(".symver ncclshim_glibc_start_main, __libc_start_main@" NCCLSHIM_START_VERSION);

/* Defined by crti.o and by the linker, in this executable. */
extern void _init(void) __attribute__((visibility("hidden")));
extern ncclshim_init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern ncclshim_init_fn __init_array_end[] __attribute__((visibility("hidden")));

static void ncclshim_run_constructors(int argc, char **argv, char **envp) {
  _init();
  size_t count = (size_t)(__init_array_end - __init_array_start);
  for (size_t i = 0; i < count; i++) __init_array_start[i](argc, argv, envp);
}

/* The name --wrap gives; init and fini are NULL from the new start file. */
__attribute__((visibility("hidden"))) int __wrap___libc_start_main(
    ncclshim_main_fn main, int argc, char **argv, ncclshim_init_fn init, void (*fini)(void),
    void (*rtld_fini)(void), void *stack_end) {
  (void)init;
  return ncclshim_glibc_start_main(main, argc, argv, ncclshim_run_constructors, fini, rtld_fini,
                                   stack_end);
}
