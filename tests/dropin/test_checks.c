/* The drop-in's checks on the fakes. With NCCLSHIM_AGREE set (read at load), each init that
 * made a communicator runs the agreement: equal records keep the init's result, a rank
 * made to differ (the fake all-gather edits its slot) turns the init into ncclInvalidUsage,
 * aborts the communicator and says why on stderr; unset, no all-gather runs at all. Always:
 * ncclDevCommCreate failing with ncclInvalidUsage names the versions that met, on stderr
 * and in the thread's next ncclGetLastError, after NCCL's own message. */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define NCCLSHIM_DECLARE_DEVICE_API /* the device API's names, as the drop-in exports them */
#include "tests/fakes/fake_cuda.h"
#include "tests/fakes/fake_nccl.h"
#include "ncclshim/ncclshim.h"

static int agree_on; /* the mode this run was started in */

static void *fake_symbol(const char *name) {
  void *handle = dlopen(getenv("NCCLSHIM_NCCL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (handle == NULL) fail_msg("the fake NCCL is not loaded");
  void *address = dlsym(handle, name);
  if (address == NULL) fail_msg("the fake has no %s", name);
  dlclose(handle);
  return address;
}

static int fake_count(const char *function) {
  return ((fake_nccl_named_count_fn)(uintptr_t)fake_symbol("fake_nccl_count"))(function);
}

static void gather_edit(int rank, const char *from, const char *to) {
  ((fake_nccl_edit_fn)(uintptr_t)fake_symbol("fake_nccl_set_gather_edit"))(rank, from, to);
}

/* stderr while `run` runs, into text. */
static void captured(void (*run)(void *), void *arg, char *text, size_t size) {
  char path[] = "/tmp/ncclshim-checks-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  run(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, text, size - 1, 0);
  close(fd);
  text[n > 0 ? n : 0] = '\0';
}

static int setup(void **state) {
  (void)state;
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != 22907) return -1; /* loads */
  ((fake_nccl_void_fn)(uintptr_t)fake_symbol("fake_nccl_reset"))();
  ((fake_nccl_int_fn)(uintptr_t)fake_symbol("fake_nccl_set_live"))(1);
  /* the fake driver's device 0 current, as in a CUDA program (the agreement allocates) */
  fake_cuda_api cuda;
  return fake_cuda_bind(NULL, &cuda) == 0 && cuda.use_device(0) == 0 ? 0 : -1;
}

typedef struct init_call {
  int config; /* ncclCommInitRankConfig, non-blocking; else ncclCommInitRank */
  ncclComm_t comm;
  ncclResult_t result;
} init_call;

static void run_init(void *arg) {
  init_call *call = arg;
  ncclUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  call->comm = NULL;
  if (call->config) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    call->result = ncclCommInitRankConfig(&call->comm, 2, id, 0, &config);
  } else {
    call->result = ncclCommInitRank(&call->comm, 2, id, 0);
  }
}

static void test_agree_equal(void **state) {
  (void)state;
  gather_edit(-1, NULL, NULL);
  for (int config = 0; config <= 1; config++) {
    int gathers = fake_count("ncclAllGather");
    init_call call = {.config = config};
    char err[4096];
    captured(run_init, &call, err, sizeof(err));
    assert_int_equal(call.result, config ? ncclInProgress : ncclSuccess);
    assert_non_null(call.comm);
    assert_int_equal(fake_count("ncclAllGather") - gathers, agree_on ? 1 : 0);
    assert_null(strstr(err, "NCCLSHIM_AGREE"));
    assert_int_equal(ncclCommDestroy(call.comm), ncclSuccess);
  }
}

static void test_agree_differing_rank(void **state) {
  (void)state;
  gather_edit(1, "nccl=2.29.7", "nccl=2.28.3\x1b");
  for (int config = 0; config <= 1; config++) {
    int aborts = fake_count("ncclCommAbort");
    init_call call = {.config = config};
    char err[4096];
    captured(run_init, &call, err, sizeof(err));
    if (!agree_on) {
      assert_int_equal(call.result, config ? ncclInProgress : ncclSuccess);
      assert_int_equal(fake_count("ncclAllGather"), 0);
      assert_int_equal(ncclCommDestroy(call.comm), ncclSuccess);
      continue;
    }
    assert_int_equal(call.result, ncclInvalidUsage);
    assert_null(call.comm);
    assert_int_equal(fake_count("ncclCommAbort") - aborts, 1);
    assert_non_null(strstr(err, "ncclshim: NCCLSHIM_AGREE: "));
    assert_non_null(strstr(err, "ranks disagree with rank 0"));
    assert_non_null(strstr(err, "nccl=2.28.3\\x1b")); /* escaped as the recorder's */
  }
}

static void run_dev_comm_create(void *arg) {
  ncclResult_t *result = arg;
  struct {
    size_t size;
    unsigned int magic, version;
    void *rest[4];
  } reqs = {88, 0xcafebeefu, 23007, {0}};
  ncclshim_dev_comm_t *out = (ncclshim_dev_comm_t *)&reqs.rest; /* never written by the fake */
  *result = ncclDevCommCreate(NULL, (const ncclshim_dev_comm_requirements_t *)&reqs, out);
}

static void test_devapi_explained(void **state) {
  (void)state;
  ((fake_nccl_text_fn)(uintptr_t)fake_symbol("fake_nccl_set_last_error"))("fake says no");
  ((fake_nccl_inject_fn)(uintptr_t)fake_symbol("fake_nccl_inject"))("ncclDevCommCreate",
                                                                    ncclInvalidUsage, 1);
  ncclResult_t result = ncclSuccess;
  char err[4096];
  captured(run_dev_comm_create, &result, err, sizeof(err));
  assert_int_equal(result, ncclInvalidUsage);
  assert_non_null(strstr(err, "ncclshim: ncclDevCommCreate: invalid usage: "));
  assert_non_null(strstr(err, "NCCL 2.30.7 headers: newer than the library"));
  const char *text = ncclGetLastError(NULL);
  assert_non_null(strstr(text, "fake says no; "));
  assert_non_null(strstr(text, "the loaded NCCL is 2.29.7"));
  assert_string_equal(ncclGetLastError(NULL), "fake says no"); /* once, then NCCL's own */
  /* Another failure is passed on untouched. */
  ((fake_nccl_inject_fn)(uintptr_t)fake_symbol("fake_nccl_inject"))("ncclDevCommCreate",
                                                                    ncclInvalidArgument, 1);
  captured(run_dev_comm_create, &result, err, sizeof(err));
  assert_int_equal(result, ncclInvalidArgument);
  assert_null(strstr(err, "ncclDevCommCreate"));
  assert_string_equal(ncclGetLastError(NULL), "fake says no");
}

int main(void) {
  agree_on = getenv("NCCLSHIM_AGREE") != NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_agree_equal),
      cmocka_unit_test(test_agree_differing_rank),
      cmocka_unit_test(test_devapi_explained),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
