/* Writes the version script of one fake libnccl variant: the functions a release of that
 * version exports (both ncclX and pncclX), less any named on the command line, plus the
 * fake's own fake_nccl_* accessors.
 *   gen_fake_map VERSION [DROPPED_NAME ...] > fake.map */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclshim/nccl_functions.h"

#define ROW_(name, version, policy, role, returns, n, params) {#name, version},
static const struct {
  const char *name;
  int version;
} rows[] = {NCCLSHIM_NCCL_FUNCTIONS(ROW_)};

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s VERSION [DROPPED_NAME ...]\n", argv[0]);
    return 2;
  }
  int version = atoi(argv[1]);
  printf("{\n  global:\n    fake_nccl_*;\n");
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    int dropped = 0;
    for (int a = 2; a < argc; a++) dropped |= strcmp(argv[a], rows[i].name) == 0;
    if (rows[i].version <= version && !dropped)
      printf("    %s;\n    p%s;\n", rows[i].name, rows[i].name);
  }
  printf("  local:\n    *;\n};\n");
  return 0;
}
