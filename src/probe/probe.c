/* ncclshim-probe: what NCCL and CUDA driver this machine offers, and what they can do.
 * Exit status: 0 report made and requirements met; 1 a requirement unmet; 2 usage error. */
#include "probe.h"

#include <stdlib.h>
#include <string.h>

#include "parse_version.h"

static const char usage[] =
    "usage: ncclshim-probe [--json] [-v] [--no-devices] [--library PATH] [--require X]...\n"
    "\n"
    "Reports the NCCL and CUDA driver that ncclshim finds: where, how, which version, what\n"
    "they can do, and (with a driver) every GPU.\n"
    "\n"
    "  --json          one JSON document instead of text\n"
    "  -v, --verbose   add every place searched, with the reason for each\n"
    "  --no-devices    skip the GPU queries (they need cuInit)\n"
    "  --library PATH  use this NCCL file alone (as NCCLSHIM_NCCL_LIBRARY does)\n"
    "  --require X     X is a version (2.28, 2.28.3) or a capability (symmetric-memory);\n"
    "                  repeatable; an unmet one makes the exit status 1\n"
    "  -h, --help      this text\n"
    "\n"
    "Exit status: 0 report made and requirements met; 1 a requirement unmet; 2 usage error.\n";

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ncclshim-probe: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", usage);
  return 2;
}

typedef struct requirement {
  const char *text;
  int version;    /* packed, or 0 */
  int capability; /* or -1 */
} requirement;

/* Prints one line per unmet requirement; returns how many. */
static int check_requirements(const probe *p, const requirement *reqs, int count) {
  int unmet = 0;
  char have[16], why[256];
  for (int i = 0; i < count; i++) {
    int found = ncclshim_nccl_status(p->nccl) == NCCLSHIM_OK;
    if (reqs[i].version) {
      if (!found || ncclshim_nccl_version(p->nccl) < reqs[i].version) {
        fprintf(stderr, "ncclshim-probe: requirement not met: NCCL >= %s; %s%s\n", reqs[i].text,
                found ? "found " : "no NCCL: ",
                found ? ncclshim_format_version(ncclshim_nccl_version(p->nccl), have, sizeof(have))
                      : ncclshim_nccl_message(p->nccl));
        unmet++;
      }
    } else if (!ncclshim_nccl_has(p->nccl, reqs[i].capability)) {
      fprintf(stderr, "ncclshim-probe: requirement not met: %s: %s\n", reqs[i].text,
              ncclshim_nccl_capability_reason(p->nccl, reqs[i].capability, why, sizeof(why)));
      unmet++;
    }
  }
  return unmet;
}

static void query_devices(probe *p) {
  p->cuda_init = NCCLSHIM_DRIVER_UNAVAILABLE;
  if (!p->query_devices) {
    p->devices_skipped = "not queried (--no-devices)";
    return;
  }
  if (ncclshim_cuda_status(p->cuda) != NCCLSHIM_OK) {
    p->devices_skipped = "not queried: no usable driver";
    return;
  }
  p->cuda_init = ncclshim_cuda_init(p->cuda);
  if (p->cuda_init != NCCLSHIM_OK) {
    p->devices_skipped = p->cuda_init == NCCLSHIM_NO_DEVICE ? "none: the driver sees no device"
                                                            : "not queried: cuInit failed";
    return;
  }
  if (ncclshim_cuda_device_count(p->cuda, &p->device_count) != NCCLSHIM_OK) {
    p->devices_skipped = "not queried: cuDeviceGetCount failed";
    return;
  }
  p->devices = calloc((size_t)p->device_count + 1, sizeof(*p->devices));
  for (int d = 0; p->devices != NULL && d < p->device_count; d++) {
    p->devices[d].info = (ncclshim_cuda_device_info)NCCLSHIM_CUDA_DEVICE_INFO_INIT;
    p->devices[d].status = ncclshim_cuda_describe_device(p->cuda, d, &p->devices[d].info);
  }
}

int main(int argc, char **argv) {
  probe p = {.query_devices = 1};
  int json = 0, nreqs = 0;
  const char *library = NULL;
  requirement *reqs = calloc((size_t)argc, sizeof(*reqs));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      p.verbose = 1;
    } else if (strcmp(a, "--no-devices") == 0) {
      p.query_devices = 0;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (strcmp(a, "--library") == 0 || strcmp(a, "--require") == 0) {
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      const char *value = argv[++i];
      if (strcmp(a, "--library") == 0) {
        library = value;
        continue;
      }
      reqs[nreqs] =
          (requirement){value, probe_parse_version(value), ncclshim_capability_from_name(value)};
      if (reqs[nreqs].version == 0 && reqs[nreqs].capability < 0)
        return usage_error(
            "unknown requirement '%s': give a version (2.28, 2.28.3) or a capability name "
            "(see the report)",
            value);
      nreqs++;
    } else {
      return usage_error("unknown option '%s'", a);
    }
  }

  if (library != NULL) {
    ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
    options.path = library;
    ncclshim_nccl_open(&options, &p.nccl);
  } else {
    p.nccl = ncclshim_nccl_default();
  }
  p.cuda = ncclshim_cuda_default();
  query_devices(&p);
  ncclshim_nccl_fingerprint(p.nccl, p.fingerprint, sizeof(p.fingerprint));

  if (json)
    probe_print_json(&p, stdout);
  else
    probe_print_text(&p, stdout);
  fflush(stdout);
  return check_requirements(&p, reqs, nreqs) ? 1 : 0;
}
