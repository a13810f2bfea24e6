/* ncclshim-probe: what NCCL and CUDA driver this machine offers, and what they can do.
 * Exit status: 0 report made and requirements met; 1 a requirement unmet; 2 usage error or
 * the probe could not run. */
#include "ncclshim/diag.h"
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain.h"
#include "json.h"
#include "text.h"
#include "usage.h"

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

/* --library PATH, made absolute against the current directory as a command line's paths
 * are: the loader, like NCCLSHIM_NCCL_LIBRARY, takes only absolute paths. Returns a string
 * to free, or NULL with the reason printed. */
static char *absolute_library(const char *path) {
  if (path[0] == '/') return strdup(path);
  char *cwd = getcwd(NULL, 0), *joined = NULL;
  if (cwd == NULL || asprintf(&joined, "%s/%s", cwd, path) < 0) {
    fputs("ncclshim-probe: cannot make --library '", stderr);
    text_put(stderr, path, 0);
    fprintf(stderr, "' absolute: %s\n",
            cwd == NULL ? "the current directory is unreadable" : "out of memory");
    joined = NULL;
  }
  free(cwd);
  return joined;
}

/* Reads the command line into p and *library. Returns -1 to go on, else the exit status. */
static int parse_arguments(int argc, char **argv, probe *p, int *json, char **library,
                           doctor_args *doctor) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int mine = doctor_parse_option(argc, argv, &i, doctor);
    if (mine == -2) {
      return 2;
    } else if (mine < 0) {
      return probe_usage_error("%s needs a value", a);
    } else if (mine) {
      continue;
    } else if (strcmp(a, "--json") == 0) {
      *json = 1;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      p->verbose = 1;
    } else if (strcmp(a, "--no-devices") == 0) {
      p->query_devices = 0;
    } else if (strcmp(a, "--verify") == 0) {
      p->verify = 1;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(probe_usage, stdout);
      return 0;
    } else if (strcmp(a, "--library") == 0 || strcmp(a, "--require") == 0) {
      if (i + 1 >= argc) return probe_usage_error("%s needs a value", a);
      const char *value = argv[++i];
      if (strcmp(a, "--library") == 0) {
        if (value[0] == '\0') return probe_usage_error("%s needs a path, not an empty one", a);
        /* The report describes one library: a second one would replace the first unseen. */
        if (*library != NULL) return probe_usage_error("%s given twice: give one NCCL file", a);
        if ((*library = absolute_library(value)) == NULL) return 2;
      } else if (probe_parse_requirement(value, &p->requirements[p->requirement_count])) {
        p->requirement_count++;
      } else {
        return probe_usage_error(
            "unknown requirement '%s': give a version (2.28, 2.28.3), a "
            "capability name (see the report), driver-compatible or plugins-compatible",
            value);
      }
    } else {
      return probe_usage_error("unknown option '%s'", a);
    }
  }
  /* The report's options describe one probe of one library: --explain and --doctor describe
   * the machine, and would silently drop them. */
  const char *report_only = *library               ? "--library"
                            : p->requirement_count ? "--require"
                            : p->verify            ? "--verify"
                            : !p->query_devices    ? "--no-devices"
                            : p->verbose           ? "--verbose"
                                                   : NULL;
  if (report_only && (doctor->explain || doctor->doctor))
    return probe_usage_error("%s goes with the report, not with --explain or --doctor",
                             report_only);
  return -1;
}

/* Everything written, or the write error (a full disk, a closed pipe): exit status 2. */
static int finish_output(int status) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "ncclshim-probe: cannot write the report: %s\n", strerror(errno));
    return 2;
  }
  return status;
}

static void gather(probe *p, const char *library) {
  if (library != NULL) {
    ncclshim_nccl_options options = NCCLSHIM_NCCL_OPTIONS_INIT;
    options.path = library;
    ncclshim_nccl_open(&options, &p->nccl);
  } else {
    p->nccl = ncclshim_nccl_default();
  }
  p->cuda = ncclshim_cuda_default();
  query_devices(p);
  ncclshim_nccl_fingerprint(p->nccl, p->fingerprint, sizeof(p->fingerprint));
  if (p->verify)
    ncclshim_nccl_fingerprint_content(p->nccl, p->fingerprint_content,
                                      sizeof(p->fingerprint_content));
  probe_check_driver(p);
  probe_gather_plugins(p);
  probe_check_requirements(p);
}

int main(int argc, char **argv) {
  probe p = {.query_devices = 1};
  int json = 0, status;
  char *library = NULL;
  doctor_args doctor = {0};
  p.requirements = calloc((size_t)argc, sizeof(*p.requirements));
  if (p.requirements == NULL) {
    fprintf(stderr, "ncclshim-probe: out of memory\n");
    return 2;
  }
  probe_usage_find_json(argc, argv);
  if ((status = parse_arguments(argc, argv, &p, &json, &library, &doctor)) < 0 &&
      (status = doctor_run(&doctor, json, stdout)) < 0) {
    gather(&p, library);
    if (json)
      probe_print_json(&p, stdout);
    else
      probe_print_text(&p, stdout);
    fflush(stdout);
    for (int i = 0; i < p.requirement_count; i++) {
      if (p.requirements[i].met) continue;
      fprintf(stderr, "ncclshim-probe: requirement not met: %s: ", p.requirements[i].text);
      text_put(stderr, p.requirements[i].reason, 0); /* may hold a path */
      fputc('\n', stderr);
    }
    status = p.unmet ? 1 : 0;
  }
  status = finish_output(status);
  ncclshim_nccl_close(p.nccl); /* ignores the default handle */
  free(p.devices);
  free(p.requirements);
  free(library);
  ncclshim_plugin_list_free(p.plugins);
  free(doctor.pythons);
  return status;
}
