/* The process-wide default handle: loaded once, whatever the number of threads racing for
 * it, from NCCLSHIM_NCCL_LIBRARY here (set before first use); and the volk-style calls. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ncclshim/ncclshim.h"
#include "ncclshim/diag.h"
#include "support.h"

enum { THREADS = 32 };

static pthread_barrier_t start;

static void *race(void *out) {
  pthread_barrier_wait(&start);
  *(const ncclshim_nccl_table **)out = ncclshim_table();
  return NULL;
}

static void test_threads_race_first_use(void **state) {
  (void)state;
  char *path = fake_path("2.28.9");
  setenv("NCCLSHIM_NCCL_LIBRARY", path, 1);
  pthread_t threads[THREADS];
  const ncclshim_nccl_table *seen[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&threads[i], NULL, race, &seen[i]), 0);
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  for (int i = 1; i < THREADS; i++) assert_ptr_equal(seen[i], seen[0]);
  assert_ptr_equal(seen[0], ncclshim_nccl_functions(ncclshim_nccl_default()));
  /* One load: the version was asked once. */
  assert_int_equal(fake_version_calls(path), 1);
  assert_int_equal(ncclshim_init(), NCCLSHIM_OK);
  assert_int_equal(ncclshim_version(), 22809);
  assert_int_equal(ncclshim_nccl_found_via(ncclshim_nccl_default()), NCCLSHIM_VIA_ENVIRONMENT);
  /* The default handle cannot be closed by mistake. */
  ncclshim_nccl_close(ncclshim_nccl_default());
  assert_int_equal(ncclshim_version(), 22809);
  ncclshim_table()->ncclGroupStart();
  assert_string_equal(fake_last_call(path)->function, "ncclGroupStart");
}

static void test_build_tag(void **state) {
  (void)state;
  /* The fakes carry no banner: the tag is empty, and asking twice is stable. */
  ncclshim_nccl *nccl = ncclshim_nccl_default();
  assert_string_equal(ncclshim_nccl_build(nccl), "");
  assert_string_equal(ncclshim_nccl_build(nccl), "");
  assert_string_equal(ncclshim_nccl_build(NULL), "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_race_first_use),
      cmocka_unit_test(test_build_tag),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
