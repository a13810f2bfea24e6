/* The CUDA toolkit's real stub libcuda.so, where this machine has one: loaded explicitly it is
 * refused as DRIVER_UNAVAILABLE with the file named, both by its stubs/ directory and, for a
 * copy outside that directory, by the CUDA_ERROR_STUB_LIBRARY it answers. Skipped without one
 * of this test's architecture. */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"
#include "cuda_fakes.h"
#include "ncclshim/cuda.h"

/* The first /usr/local/cuda*\/lib{64,}/stubs/libcuda.so, or NULL. */
static char *find_toolkit_stub(void) {
  static const char *const patterns[] = {"/usr/local/cuda*/lib64/stubs/libcuda.so",
                                         "/usr/local/cuda*/lib/stubs/libcuda.so"};
  for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
    glob_t found;
    if (glob(patterns[i], 0, NULL, &found) == 0 && found.gl_pathc > 0) {
      char *path = strdup(found.gl_pathv[0]);
      globfree(&found);
      return path;
    }
  }
  return NULL;
}

/* `path` opened explicitly, refused as a stub with the file named and `why`. */
static ncclshim_cuda *open_stub(const char *path, const char *why) {
  ncclshim_cuda *cuda = cuda_opened(path, NCCLSHIM_DRIVER_UNAVAILABLE);
  printf("# %s\n", ncclshim_cuda_message(cuda));
  expect_stub(cuda, ncclshim_cuda_message(cuda), path, why);
  return cuda;
}

static void test_toolkit_stub(void **state) {
  (void)state;
  ncclshim_cuda *cuda = open_stub(find_toolkit_stub(), "the CUDA toolkit's stub library");
  assert_null(ncclshim_cuda_path(cuda));
  assert_int_equal(ncclshim_cuda_functions(cuda)->cuInit(0), NCCLSHIM_CUDA_ERROR_NOT_INITIALIZED);
  ncclshim_cuda_close(cuda);
}

/* Renamed out of its stubs/ directory, the stub gives itself away by answering 34. */
static void test_toolkit_stub_copied_elsewhere(void **state) {
  (void)state;
  char *copy = join(scratch_dir(), "libcuda.so.1");
  copy_file(find_toolkit_stub(), copy, (size_t)-1, 0);
  ncclshim_cuda_close(open_stub(copy, "CUDA_ERROR_STUB_LIBRARY (34)"));
}

int main(void) {
  /* Skipped (77) as a whole: without a stub, or with one this test cannot load (the
   * toolkit's x86-64 stub under an aarch64 build run by qemu-user, for one). */
  char *stub = find_toolkit_stub();
  if (stub == NULL) {
    printf("no toolkit stub libcuda.so on this machine: skipped\n");
    return 77;
  }
  if (elf_machine(stub) != own_machine()) {
    printf("%s is for %s", stub, machine_name(elf_machine(stub)));
    printf(", this test for %s: skipped\n", machine_name(own_machine()));
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_toolkit_stub),
      cmocka_unit_test(test_toolkit_stub_copied_elsewhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
