/* The probe's usage text and its usage errors, below both argument loops (probe.c's and
 * doctor_args.c's), which each report one. */
#include "usage.h"

#include <stdio.h>
#include <string.h>

#include "json.h"
#include "text.h"

const char probe_usage[] =
    "usage: ncclshim-probe [--json] [-v] [--no-devices] [--verify] [--library PATH]\n"
    "                      [--require X]...\n"
    "       ncclshim-probe --explain TEXT | --doctor [--json] [--python PREFIX]...\n"
    "\n"
    "Reports the NCCL and CUDA driver that ncclshim finds: where, how, which version, what\n"
    "they can do, whether the driver can run that NCCL, and (with a driver) every GPU.\n"
    "\n"
    "  --json          one JSON document instead of text (keys: man ncclshim-probe)\n"
    "  -v, --verbose   add every place searched, with the reason for each\n"
    "  --no-devices    skip the GPU queries (they need cuInit)\n"
    "  --verify        also hash every byte of the NCCL file (the fingerprint reads only\n"
    "                  the mapped image's build-id): fingerprint_content in the report\n"
    "  --library PATH  use this NCCL file alone, as NCCLSHIM_NCCL_LIBRARY does; a relative\n"
    "                  PATH is taken from the current directory\n"
    "  --require X     X is a version (2.28, 2.28.3), a capability (symmetric-memory),\n"
    "                  driver-compatible (the driver supports NCCL's CUDA build) or\n"
    "                  plugins-compatible (NCCL takes every plugin it would load);\n"
    "                  repeatable; an unmet one makes the exit status 1\n"
    "  --explain TEXT  what an NCCL error text means on this machine (undefined symbol,\n"
    "                  GLIBC_ version not found, Mismatched NCCL version, libnccl.so.2 not\n"
    "                  found) and what to change; exit 0 explained, 1 cannot tell\n"
    "  --doctor        every NCCL here, which one each kind of process loads, and each\n"
    "                  problem with what to do; exit 0 nothing wrong, 1 a problem found\n"
    "  --python PREFIX with --explain or --doctor, also this Python environment; repeatable\n"
    "  -h, --help      this text\n"
    "\n"
    "Exit status: 0 report made and requirements met; 1 a requirement unmet; 2 usage error\n"
    "or the probe could not run.\n";

/* --json anywhere on the command line (a value of an option that takes one is skipped):
 * then a usage error is a JSON object on stdout as well. */
static int json_asked;

void probe_usage_find_json(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) json_asked = 1;
    if (strcmp(argv[i], "--library") == 0 || strcmp(argv[i], "--require") == 0 ||
        strcmp(argv[i], "--explain") == 0 || strcmp(argv[i], "--python") == 0)
      i++;
  }
}

int probe_usage_error(const char *fmt, const char *arg) {
  char message[1024];
  snprintf(message, sizeof(message), fmt, arg);
  /* The argument is the user's text: escaped, so that it can drive no terminal, forge no
   * line (a newline) and break no UTF-8 reader. */
  fputs("ncclshim-probe: ", stderr);
  text_put(stderr, message, 0);
  fprintf(stderr, "\n\n%s", probe_usage);
  if (json_asked) {
    fputs("{\"error\": {\"kind\": \"usage\", \"message\": ", stdout);
    json_string(stdout, message);
    fputs("}}\n", stdout);
  }
  return 2;
}
