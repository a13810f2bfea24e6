/* fake_cuda_bind (fake_cuda.h): every control of the fake driver, bound from its handle. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake_cuda.h"

int fake_cuda_bind(const char *path, fake_cuda_api *api) {
  if (path == NULL) path = getenv("NCCLSHIM_CUDA_LIBRARY");
  void *handle = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (handle == NULL && path != NULL) handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (handle == NULL) {
    fprintf(stderr, "fake_cuda_bind: cannot load the fake driver %s: %s\n",
            path ? path : "(no path: NCCLSHIM_CUDA_LIBRARY is unset)", path ? dlerror() : "");
    return -1;
  }
  int missing = 0;
#define BIND_(ret, name, params)                                                           \
  if ((api->name = (ret(*) params)(uintptr_t)dlsym(handle, "fake_cuda_" #name)) == NULL) { \
    fprintf(stderr, "fake_cuda_bind: %s has no fake_cuda_%s\n", path, #name);              \
    missing = 1;                                                                           \
  }
  FAKE_CUDA_CONTROLS(BIND_)
  api->log = dlsym(handle, "fake_log");
  api->control = dlsym(handle, "fake_control");
  /* the reference dlopen took is kept: the fake stays loaded while the api is used */
  return missing || api->log == NULL || api->control == NULL ? -1 : 0;
}
