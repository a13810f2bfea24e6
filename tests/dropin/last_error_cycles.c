/* ncclshim_last_error() after 1100 dlopen/dlclose cycles of libncclshim: each
 * load used to create a pthread key for the thread's message and never delete it, so that
 * after PTHREAD_KEYS_MAX (1024) loads no key was left and every message was lost. A load now
 * deletes its key (and frees the unloading thread's message) when it is unloaded. The
 * library (or the drop-in, which carries the same code) is in $LIBNCCLSHIM. Plain C. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CYCLES = 1100 };

int main(void) {
  const char *library = getenv("LIBNCCLSHIM");
  if (library == NULL) {
    fprintf(stderr, "LIBNCCLSHIM is not set\n");
    return 99;
  }
  for (int i = 0; i < CYCLES; i++) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    int (*open_fn)(const void *, void **) =
        (int (*)(const void *, void **))(uintptr_t)dlsym(handle, "ncclshim_nccl_open");
    const char *(*last_error)(void) =
        (const char *(*)(void))(uintptr_t)dlsym(handle, "ncclshim_last_error");
    if (open_fn == NULL || last_error == NULL) {
      fprintf(stderr, "a function is missing\n");
      return 1;
    }
    int status = open_fn(NULL, NULL); /* out is NULL: an error, with its message */
    const char *message = last_error();
    if (status == 0 || strstr(message, "out is NULL") == NULL) {
      fprintf(stderr, "cycle %d: status %d, message \"%s\"\n", i, status, message);
      return 1;
    }
    dlclose(handle);
  }
  printf("ncclshim_last_error() kept its message through %d dlopen/dlclose cycles\n", CYCLES);
  return 0;
}
