/* Default options of the sanitizer runtimes, compiled into every object of the sanitizer CI
 * builds (.ci/run: -Dc_args=-include,<this file>), so that helper programs which the tests
 * start with an exact environment (no ASAN_OPTIONS reaches them) get them too. ASAN_OPTIONS,
 * LSAN_OPTIONS and TSAN_OPTIONS still override them. Unused by ordinary builds. */
#ifndef NCCLSHIM_SANITIZER_DEFAULTS_H
#define NCCLSHIM_SANITIZER_DEFAULTS_H

#if defined(__SANITIZE_ADDRESS__)
#define NCCLSHIM_SANITIZER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NCCLSHIM_SANITIZER_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define NCCLSHIM_SANITIZER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NCCLSHIM_SANITIZER_TSAN 1
#endif
#endif

#define NCCLSHIM_SANITIZER_HOOK_ __attribute__((weak, used, visibility("default")))

#ifdef NCCLSHIM_SANITIZER_ASAN
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__ubsan_default_options(void);

NCCLSHIM_SANITIZER_HOOK_ const char *__asan_default_options(void) {
  return "detect_leaks=1:strict_string_checks=1:check_initialization_order=1:"
         "detect_stack_use_after_return=1:print_suppressions=0";
}
NCCLSHIM_SANITIZER_HOOK_ const char *__ubsan_default_options(void) {
  return "print_stacktrace=1:halt_on_error=1";
}
/* Leaks that are not ncclshim's (each one explained in docs/hardening.md):
 *  - allocations made by ld.so itself: under `ld.so PROGRAM` (how the tests start helpers)
 *    the link maps live in memory LeakSanitizer does not scan, so what hangs off them looks
 *    lost;
 *  - test helpers that keep their results for the life of the test program by design;
 *  - the buffers test_registration_times_out and test_memfree_fails deliberately leave to
 *    NCCL (ncclshim_symmem_alloc / _free document that they do). */
NCCLSHIM_SANITIZER_HOOK_ const char *__lsan_default_suppressions(void) {
  return "leak:ld-linux\n"
         "leak:^join$\n"
         "leak:^fake_path$\n"
         "leak:^scratch_dir$\n"
         "leak:^env_var$\n"
         "leak:^env_entry$\n"
         "leak:^cuda_fake_path$\n"
         "leak:^find_toolkit_stub$\n"
         "leak:^hs_long_path$\n"
         "leak:^test_registration_times_out$\n"
         "leak:^test_memfree_fails$\n";
}
#endif

#ifdef NCCLSHIM_SANITIZER_TSAN
const char *__tsan_default_options(void);
NCCLSHIM_SANITIZER_HOOK_ const char *__tsan_default_options(void) {
  return "halt_on_error=1:second_deadlock_stack=1";
}
#endif

#endif
