#include "comm_fakes.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "support.h"

static char *current;

void *fake_symbol(const char *path, const char *name) {
  char why[4096 + 256];
  void *address = symbol_if_loaded(path, name, why, sizeof(why));
  if (address == NULL) fail_msg("%s", why);
  return address;
}

#define FAKE(type, name) ((type)(uintptr_t)fake_symbol(current, name))

ncclshim_nccl *fake_open(const char *variant) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = current = fake_path(variant);
  /* the fake driver, where the test has one: a context current, as a CUDA program has */
  if (getenv("NCCLSHIM_CUDA_LIBRARY") != NULL) assert_int_equal(cuda_fake()->use_device(0), 0);
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_OK);
  FAKE(fake_nccl_void_fn, "fake_nccl_reset")();
  fake_live(1);
  return nccl;
}
const char *fake_current_path(void) { return current; }

void fake_live(int on) { FAKE(fake_nccl_int_fn, "fake_nccl_set_live")(on); }
void fake_async(int polls, int final_result) {
  FAKE(fake_nccl_async_fn, "fake_nccl_set_async")(polls, final_result);
}
void fake_abort_hang(int on) { FAKE(fake_nccl_int_fn, "fake_nccl_set_abort_hang")(on); }
int fake_abort_returns(void) { return FAKE(fake_nccl_count_fn, "fake_nccl_abort_returns")(); }
int fake_wait_abort_returns(int count, int timeout_ms) {
  return FAKE(fake_nccl_wait_fn, "fake_nccl_wait_abort_returns")(count, timeout_ms);
}
void fake_null_window(int on) { FAKE(fake_nccl_int_fn, "fake_nccl_set_null_window")(on); }
void fake_peer_lost(int polls, int loss) {
  FAKE(fake_nccl_async_fn, "fake_nccl_set_peer_lost")(polls, loss);
}
void fake_abort_delay(int ms) { FAKE(fake_nccl_int_fn, "fake_nccl_set_abort_delay")(ms); }
void fake_last_error(const char *text) {
  FAKE(fake_nccl_text_fn, "fake_nccl_set_last_error")(text);
}
void fake_inject(const char *function, int result, int times) {
  FAKE(fake_nccl_inject_fn, "fake_nccl_inject")(function, result, times);
}
int fake_count(const char *function) {
  return FAKE(fake_nccl_named_count_fn, "fake_nccl_count")(function);
}
int fake_seq(const char *function) {
  return FAKE(fake_nccl_named_count_fn, "fake_nccl_last_seq")(function);
}
int fake_allocations(void) { return FAKE(fake_nccl_count_fn, "fake_nccl_live_allocations")(); }
int fake_windows(void) { return FAKE(fake_nccl_count_fn, "fake_nccl_live_windows")(); }

const fake_cuda_api *cuda_fake(void) {
  static fake_cuda_api api;
  static int bound;
  if (!bound) {
    ncclshim_cuda_default(); /* loads it */
    if (fake_cuda_bind(NULL, &api) != 0) fail_msg("the fake driver's controls are missing");
    bound = 1;
  }
  return &api;
}
void fake_cuda_fresh(void) {
  cuda_fake()->reset();
  assert_int_equal(cuda_fake()->use_device(0), 0);
}
void fake_cuda_capture(int result, int status) {
  (void)cuda_fake(); /* loads it */
  const char *path = getenv("NCCLSHIM_CUDA_LIBRARY");
  *(int *)fake_symbol(path, "fake_capture_result") = result;
  *(int *)fake_symbol(path, "fake_capture_status") = status;
}
void fake_cuda_query(int result) { cuda_fake()->set_stream_query(result); }
void fake_cuda_event_query(int result) { cuda_fake()->set_event_query(result); }
void fake_cuda_record_result(int result) {
  cuda_fake()->inject("cuEventRecord", 0, NULL, result, result != 0 ? FAKE_CUDA_FOREVER : 0);
}
int fake_cuda_events(int which) {
  static const char *const names[] = {"cuEventCreate", "cuEventDestroy", "cuEventRecord",
                                      "cuEventQuery"};
  return cuda_fake()->count(names[which & 3]);
}

ncclshim_comm *fake_comm(ncclshim_nccl *nccl, int blocking) {
  ncclUniqueId id;
  memset(&id, 0x5a, sizeof(id));
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = blocking;
  ncclshim_comm *comm = NULL;
  assert_int_equal(ncclshim_comm_init(nccl, 2, &id, 0, &options, &comm), NCCLSHIM_OK);
  assert_non_null(comm);
  return comm;
}

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void assert_message_(const char *part, const char *file, int line) {
  const char *message = ncclshim_last_error();
  if (strstr(message, part) != NULL) return;
  print_error("message \"%s\" lacks \"%s\"\n", message, part);
  _fail(file, line);
}

ncclshim_nccl *open_absent(void) {
  ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
  options.path = "/nonexistent/libnccl.so.2";
  ncclshim_nccl *nccl = NULL;
  assert_int_equal(ncclshim_nccl_open(&options, &nccl), NCCLSHIM_NOT_FOUND);
  return nccl;
}
