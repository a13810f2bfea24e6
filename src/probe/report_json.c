/* The probe's JSON document: the same facts as the text, under stable keys. */
#include <stdio.h>

#include "ncclshim/diag.h"
#include "json.h"
#include "probe.h"
#include "report_census.h"

static void key(FILE *out, const char *name) { fprintf(out, "\"%s\": ", name); }

static void attempts(FILE *out, const ncclshim_attempt *(*get)(const void *, size_t),
                     const void *handle, size_t count) {
  key(out, "attempts");
  fputc('[', out);
  for (size_t i = 0; i < count; i++) {
    const ncclshim_attempt *a = get(handle, i);
    fprintf(out, "%s{\"candidate\": ", i ? ", " : "");
    json_string(out, a->candidate);
    fprintf(out, ", \"found_via\": \"%s\", \"status\": \"%s\", \"reason\": ",
            ncclshim_found_via_name(a->how), ncclshim_status_name(a->result));
    json_string(out, a->reason);
    fputc('}', out);
  }
  fputc(']', out);
}

static const ncclshim_attempt *nccl_attempt(const void *h, size_t i) {
  return ncclshim_nccl_attempt(h, i);
}
static const ncclshim_attempt *cuda_attempt(const void *h, size_t i) {
  return ncclshim_cuda_attempt(h, i);
}

/* Functions of the list the library lacks: those of later releases than the one loaded, or
 * those its version should have (a broken or customised build). */
static void function_list(FILE *out, ncclshim_nccl *nccl, int unexpected) {
  fputc('[', out);
  int first = 1;
  for (int fn = 0; ncclshim_nccl_status(nccl) == NCCLSHIM_OK && fn < NCCLSHIM_NCCL_FUNCTION_COUNT;
       fn++) {
    int listed = !ncclshim_nccl_has_function(nccl, fn) &&
                 (ncclshim_nccl_unexpectedly_missing(nccl, fn) != 0) == unexpected;
    if (!listed) continue;
    fprintf(out, "%s\"%s\"", first ? "" : ", ", ncclshim_nccl_function_name(fn));
    first = 0;
  }
  fputc(']', out);
}

/* The keys a search's object opens with, the same for NCCL and the driver: "found",
 * "status", "message", "path". The object is left open. Returns "found". */
static int search_head(FILE *out, const char *key, ncclshim_status status, const char *message,
                       const char *path) {
  fprintf(out, "\"%s\": {\"found\": %s, \"status\": \"%s\", \"message\": ", key,
          status == NCCLSHIM_OK ? "true" : "false", ncclshim_status_name(status));
  json_string(out, message);
  fprintf(out, ", \"path\": ");
  json_string(out, path);
  return status == NCCLSHIM_OK;
}

static void nccl_object(probe *p, FILE *out) {
  ncclshim_nccl *nccl = p->nccl;
  char version[16];
  int found = search_head(out, "nccl", ncclshim_nccl_status(nccl), ncclshim_nccl_message(nccl),
                          ncclshim_nccl_path(nccl));
  fprintf(out, ", \"found_via\": \"%s\", \"preloaded\": %s, \"version\": ",
          ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)),
          ncclshim_nccl_preloaded(nccl) ? "true" : "false");
  json_string(out,
              found ? ncclshim_format_version(ncclshim_nccl_version(nccl), version, sizeof(version))
                    : NULL);
  fprintf(out, ", \"version_code\": %d, \"build\": ", ncclshim_nccl_version_code(nccl));
  json_string(out, ncclshim_nccl_build(nccl));
  fprintf(out, ", \"capabilities\": [");
  int first = 1;
  for (int c = 0; c < NCCLSHIM_CAPABILITY_COUNT; c++) {
    if (!ncclshim_nccl_has(nccl, c)) continue;
    fprintf(out, "%s\"%s\"", first ? "" : ", ", ncclshim_capability_name(c));
    first = 0;
  }
  fprintf(out, "], \"newer_than_loaded\": ");
  function_list(out, nccl, 0);
  fprintf(out, ", \"unexpectedly_missing\": ");
  function_list(out, nccl, 1);
  fprintf(out, ", ");
  attempts(out, nccl_attempt, nccl, ncclshim_nccl_attempt_count(nccl));
  fputs(", ", out);
  probe_json_census(p, out);
  fputc('}', out);
}

/* true, false, or "failed: CUDA_ERROR_..." */
static void fact(FILE *out, const probe *p, ncclshim_cuda_fact f) {
  if (f.support == NCCLSHIM_CUDA_SUPPORTED || f.support == NCCLSHIM_CUDA_UNSUPPORTED) {
    fputs(f.support == NCCLSHIM_CUDA_SUPPORTED ? "true" : "false", out);
    return;
  }
  char text[96];
  snprintf(text, sizeof(text), "failed: %s", ncclshim_cuda_result_name(p->cuda, f.result));
  json_string(out, text);
}

static void device_object(FILE *out, const probe *p, const probe_device *d) {
  const ncclshim_cuda_device_info *i = &d->info;
  fprintf(out, "{\"ordinal\": %d, \"status\": \"%s\"", i->ordinal, ncclshim_status_name(d->status));
  if (d->status == NCCLSHIM_OK) {
    char bus[32];
    snprintf(bus, sizeof(bus), "%08x:%02x:%02x.0", i->pci_domain, i->pci_bus, i->pci_device);
    fprintf(out, ", \"name\": ");
    json_string(out, i->name);
    fprintf(out,
            ", \"cc\": \"%d.%d\", \"sm_count\": %d, \"memory_bytes\": %zu, \"pci_bus_id\": \"%s\"",
            i->cc_major, i->cc_minor, i->multiprocessors, i->total_memory, bus);
    fprintf(out, ", \"vmm\": ");
    fact(out, p, i->vmm);
    fprintf(out, ", \"posix_fd\": ");
    fact(out, p, i->posix_fd_handle);
    fprintf(out, ", \"fabric\": ");
    fact(out, p, i->fabric_handle);
    fprintf(out, ", \"multicast\": ");
    fact(out, p, i->multicast);
    fprintf(out, ", \"gpu_direct_rdma\": ");
    fact(out, p, i->gpu_direct_rdma);
    fprintf(out, ", \"p2p\": [");
    for (int peer = 0; peer < i->peer_count; peer++) {
      if (peer) fputs(", ", out);
      fact(out, p, i->peer_access[peer]);
    }
    fputc(']', out);
  }
  fputc('}', out);
}

static void cuda_object(probe *p, FILE *out) {
  ncclshim_cuda *cuda = p->cuda;
  char version[16];
  search_head(out, "cuda", ncclshim_cuda_status(cuda), ncclshim_cuda_message(cuda),
              ncclshim_cuda_path(cuda));
  fprintf(out, ", \"driver_version\": ");
  int driver = ncclshim_cuda_driver_version(cuda, NULL, NULL);
  json_string(out,
              driver > 0 ? ncclshim_cuda_format_version(driver, version, sizeof(version)) : NULL);
  fprintf(out,
          ", \"stub\": %s, \"devices_skipped\": ", ncclshim_cuda_is_stub(cuda) ? "true" : "false");
  json_string(out, p->devices_skipped);
  fprintf(out, ", \"devices\": [");
  for (int d = 0; p->devices_skipped == NULL && d < p->device_count; d++) {
    if (d) fputs(", ", out);
    device_object(out, p, &p->devices[d]);
  }
  fprintf(out, "], ");
  attempts(out, cuda_attempt, cuda, ncclshim_cuda_attempt_count(cuda));
  fputc('}', out);
}

/* The CUDA version in the driver's encoding as "13.0", or null for 0. */
static void cuda_version(FILE *out, int version) {
  char text[16];
  json_string(out, version > 0 ? ncclshim_cuda_format_version(version, text, sizeof(text)) : NULL);
}

static void driver_object(const probe *p, FILE *out) {
  fprintf(out, "\"driver_compatibility\": {\"verdict\": \"%s\", \"nccl_build_cuda\": ",
          probe_driver_verdict_name(p->driver.verdict));
  cuda_version(out, p->driver.nccl_cuda);
  fprintf(out, ", \"driver_cuda\": ");
  cuda_version(out, p->driver.driver_cuda);
  fprintf(out, ", \"reason\": ");
  json_string(out, p->driver.reason);
  fputc('}', out);
}

static void requirements_array(const probe *p, FILE *out) {
  static const char *const kinds[] = {"version", "capability", "driver", "plugins"};
  fprintf(out, "\"requirements\": [");
  for (int i = 0; i < p->requirement_count; i++) {
    const probe_requirement *r = &p->requirements[i];
    fprintf(out, "%s{\"requirement\": ", i ? ", " : "");
    json_string(out, r->text);
    fprintf(out, ", \"kind\": \"%s\", \"met\": %s, \"reason\": ", kinds[r->kind],
            r->met ? "true" : "false");
    json_string(out, r->reason);
    fputc('}', out);
  }
  fprintf(out, "], \"requirements_met\": %s", p->unmet ? "false" : "true");
}

void probe_print_json(probe *p, FILE *out) {
  fprintf(out, "{\"schema_version\": %d, \"ncclshim\": {\"version\": \"%s\"}, ",
          PROBE_JSON_SCHEMA_VERSION, ncclshim_library_version());
  nccl_object(p, out);
  fputs(", ", out);
  cuda_object(p, out);
  fputs(", ", out);
  driver_object(p, out);
  fputs(", ", out);
  probe_json_plugins(p, out);
  fputs(", ", out);
  requirements_array(p, out);
  fprintf(out, ", \"fingerprint\": ");
  json_string(out, p->fingerprint);
  fprintf(out, ", \"fingerprint_content\": ");
  json_string(out, p->verify ? p->fingerprint_content : NULL);
  fputs("}\n", out);
}
