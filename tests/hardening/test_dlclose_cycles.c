/* dlopen + ncclshim_init + dlclose of libncclshim, repeated. The default
 * handle lives in the library's static storage and goes away with its pages; what stays a
 * cycle (the strings the handle points to), and the figure this test prints, are in
 * docs/loader.md, "Unloading libncclshim". The bound fails if the handle itself leaks again
 * (the figure given there for a heap handle) and leaves room for allocator noise. Plain C. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "support.h"

enum { CYCLES = 300, WARM_UP = 20 };
#define BOUND_PER_CYCLE 1024.0

size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

static long long heap_in_use(void) {
  if (__sanitizer_get_current_allocated_bytes)
    return (long long)__sanitizer_get_current_allocated_bytes();
  struct mallinfo2 m = mallinfo2();
  return (long long)(m.uordblks + m.hblkhd);
}

int main(void) {
  const char *library = getenv("LIBNCCLSHIM");
  if (library == NULL) {
    fprintf(stderr, "LIBNCCLSHIM is not set\n");
    return 99;
  }
  setenv("NCCLSHIM_NCCL_LIBRARY", fake_path("2.28.9"), 1);
  long long before = 0;
  for (int i = 0; i < CYCLES + WARM_UP; i++) {
    if (i == WARM_UP) before = heap_in_use();
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    void *init = dlsym(handle, "ncclshim_init");
    int (*init_fn)(void);
    *(void **)&init_fn = init;
    if (init_fn == NULL || init_fn() != 0) {
      fprintf(stderr, "ncclshim_init failed\n");
      return 1;
    }
    dlclose(handle);
  }
  double per_cycle = (double)(heap_in_use() - before) / CYCLES;
  printf("dlopen/ncclshim_init/dlclose: %.0f bytes a cycle (bound %.0f)\n", per_cycle,
         BOUND_PER_CYCLE);
  return per_cycle < BOUND_PER_CYCLE ? 0 : 1;
}
