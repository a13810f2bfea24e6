/* An application using ncclshim's API. Usage: consumer EXPECTED_NCCL_VERSION (packed,
 * 22809). Exit 0 when NCCL loaded with that version and its table answers; it prints
 * "ncclshim <version> at <path of libncclshim.so.0 in use>; NCCL <version> from <path>". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

#include <ncclshim/ncclshim.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer EXPECTED_NCCL_VERSION\n");
    return 2;
  }
  int want = atoi(argv[1]);
  if (ncclshim_init() != NCCLSHIM_OK) {
    fprintf(stderr, "no NCCL: %s\n", ncclshim_nccl_message(ncclshim_nccl_default()));
    return 1;
  }
  int code = 0;
  if (ncclshim_version() != want || ncclshim_table()->ncclGetVersion(&code) != ncclSuccess ||
      code != want) {
    fprintf(stderr, "NCCL version %d (code %d), expected %d\n", ncclshim_version(), code, want);
    return 1;
  }
  void *self = dlopen("libncclshim.so.0", RTLD_NOW | RTLD_NOLOAD);
  struct link_map *map = NULL;
  if (self == NULL || dlinfo(self, RTLD_DI_LINKMAP, &map) != 0) {
    fprintf(stderr, "libncclshim.so.0 is not loaded: %s\n", dlerror());
    return 1;
  }
  char v[16];
  printf("ncclshim %s at %s; NCCL %s from %s\n", ncclshim_library_version(), map->l_name,
         ncclshim_format_version(ncclshim_version(), v, sizeof(v)),
         ncclshim_nccl_path(ncclshim_nccl_default()));
  return 0;
}
