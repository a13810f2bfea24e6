#include "cuda_fakes.h"
#include "support.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define DIE(...) test_die("cuda test support", __VA_ARGS__)

char *cuda_fake_path(const char *variant) {
  const char *dir = getenv("CUDA_FAKE_DIR");
  if (dir == NULL) DIE("CUDA_FAKE_DIR is not set");
  char path[4096];
  snprintf(path, sizeof(path), "%s/libfake-cuda-%s.so", dir, variant);
  char *resolved = realpath(path, NULL);
  if (resolved == NULL) DIE("no fake %s", path);
  return resolved;
}

fake_cuda_log *cuda_fake_log(const char *path) { return loaded_symbol(path, "fake_log"); }
fake_cuda_control *cuda_fake_control(const char *path) {
  return loaded_symbol(path, "fake_control");
}

void cuda_fake_reset(const char *path) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle == NULL) return;
  fake_cuda_log *log = dlsym(handle, "fake_log");
  if (log != NULL) memset(log, 0, sizeof(*log));
  dlclose(handle);
}

int cuda_fake_calls(const char *path, const char *name) {
  const fake_cuda_log *log = cuda_fake_log(path);
  int count = 0;
  for (int i = 0; i < log->call_count; i++) count += strcmp(log->calls[i], name) == 0;
  return count;
}

ncclshim_status cuda_open_fake(const char *variant, ncclshim_cuda **cuda, char **path) {
  char *fake = cuda_fake_path(variant);
  ncclshim_cuda_options options = NCCLSHIM_CUDA_OPTIONS_INIT;
  options.path = fake;
  ncclshim_status status = ncclshim_cuda_open(&options, cuda);
  if (path != NULL) *path = fake;
  return status;
}

void expect_stub(const ncclshim_cuda *cuda, const char *text, const char *path, const char *why) {
  assert_int_equal(ncclshim_cuda_is_stub(cuda), 1);
  if (strstr(text, path) == NULL) fail_msg("\"%s\" does not name %s", text, path);
  if (strstr(text, why) == NULL) fail_msg("\"%s\" lacks \"%s\"", text, why);
}

ncclshim_cuda *cuda_opened(const char *path, ncclshim_status expected) {
  ncclshim_cuda_options options = NCCLSHIM_CUDA_OPTIONS_INIT;
  options.path = path;
  ncclshim_cuda *cuda = NULL;
  assert_int_equal(ncclshim_cuda_open(&options, &cuda), expected);
  return cuda;
}

ncclshim_cuda *cuda_fake_opened(const char *variant, ncclshim_status expected, char **path) {
  char *fake = cuda_fake_path(variant);
  if (path != NULL) *path = fake;
  return cuda_opened(fake, expected);
}
