/* The probe's human report: short by default, the whole search trail with -v. */
#include <inttypes.h>
#include <stdio.h>

#include "ncclshim/diag.h"
#include "probe.h"
#include "report_census.h"
#include "text.h"

const char *probe_fact_text(const probe *p, ncclshim_cuda_fact fact, char *buf, size_t size) {
  if (fact.support == NCCLSHIM_CUDA_SUPPORTED) return "yes";
  if (fact.support == NCCLSHIM_CUDA_UNSUPPORTED) return "no";
  snprintf(buf, size, "failed (%s)", ncclshim_cuda_result_name(p->cuda, fact.result));
  return buf;
}

static void print_trail(FILE *out, const ncclshim_attempt *(*get)(const void *, size_t),
                        const void *handle, size_t count) {
  fprintf(out, "  searched:\n");
  for (size_t i = 0; i < count; i++) {
    const ncclshim_attempt *a = get(handle, i);
    fprintf(out, "    %-16s ", ncclshim_found_via_name(a->how));
    text_put(out, a->candidate, 40);
    fprintf(out, " %s%s", ncclshim_status_name(a->result), a->reason[0] ? ": " : "");
    text_put(out, a->reason, 0);
    fputc('\n', out);
  }
}

static const ncclshim_attempt *nccl_attempt(const void *h, size_t i) {
  return ncclshim_nccl_attempt(h, i);
}
static const ncclshim_attempt *cuda_attempt(const void *h, size_t i) {
  return ncclshim_cuda_attempt(h, i);
}

/* "NCCL: not available (why)" and 1 when the library was not loaded; 0 when it was. */
static int print_unavailable(FILE *out, const char *library, ncclshim_status status,
                             const char *message) {
  if (status == NCCLSHIM_OK) return 0;
  fprintf(out, "%s: not available (", library);
  text_put(out, message, 0);
  fprintf(out, ")\n");
  return 1;
}

static void print_path(FILE *out, const char *path) {
  fprintf(out, "  path:       ");
  text_put(out, path, 0);
  fputc('\n', out);
}

static void print_nccl(probe *p, FILE *out) {
  ncclshim_nccl *nccl = p->nccl;
  char version[16], need[16], why[256];
  if (!print_unavailable(out, "NCCL", ncclshim_nccl_status(nccl), ncclshim_nccl_message(nccl))) {
    fprintf(out, "NCCL: %s",
            ncclshim_format_version(ncclshim_nccl_version(nccl), version, sizeof(version)));
    text_put(out, ncclshim_nccl_build(nccl), 0);
    fputc('\n', out);
    print_path(out, ncclshim_nccl_path(nccl));
    fprintf(out, "  found via:  %s%s\n", ncclshim_found_via_name(ncclshim_nccl_found_via(nccl)),
            ncclshim_nccl_preloaded(nccl) ? " (already loaded in this process)" : "");
    fprintf(out, "  capabilities:\n");
    for (int c = 0; c < NCCLSHIM_CAPABILITY_COUNT; c++) {
      int has = ncclshim_nccl_has(nccl, c);
      ncclshim_format_version(ncclshim_capability_version(c), need, sizeof(need));
      if (has)
        fprintf(out, "    yes %-22s NCCL >= %s\n", ncclshim_capability_name(c), need);
      else
        fprintf(out, "    no  %-22s NCCL >= %-8s %s\n", ncclshim_capability_name(c), need,
                ncclshim_nccl_capability_reason(nccl, c, why, sizeof(why)));
    }
    int unexpected = 0;
    for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++) {
      if (!ncclshim_nccl_unexpectedly_missing(nccl, fn)) continue;
      fprintf(out, "%s %s", unexpected++ ? "," : "  missing although its version should have:",
              ncclshim_nccl_function_name(fn));
    }
    if (unexpected) fprintf(out, " (a broken or customised build)\n");
    probe_text_census(p, out);
  }
  if (p->verbose) print_trail(out, nccl_attempt, nccl, ncclshim_nccl_attempt_count(nccl));
}

static void print_device(probe *p, FILE *out, const probe_device *d) {
  const ncclshim_cuda_device_info *i = &d->info;
  char b1[64], b2[64], b3[64], b4[64], b5[64];
  if (d->status != NCCLSHIM_OK) {
    fprintf(out, "  GPU %d: description failed (", i->ordinal);
    text_put(out, ncclshim_last_error(), 0);
    fprintf(out, ")\n");
    return;
  }
  fprintf(out, "  GPU %d: ", i->ordinal);
  text_put(out, i->name, 0);
  fprintf(out, ", compute capability %d.%d, %d SMs, %.1f GiB, PCI %08x:%02x:%02x.0\n", i->cc_major,
          i->cc_minor, i->multiprocessors, (double)i->total_memory / (1u << 30), i->pci_domain,
          i->pci_bus, i->pci_device);
  fprintf(out, "         VMM %s, POSIX fd %s, fabric %s, multicast %s, GPUDirect RDMA %s\n",
          probe_fact_text(p, i->vmm, b1, sizeof(b1)),
          probe_fact_text(p, i->posix_fd_handle, b2, sizeof(b2)),
          probe_fact_text(p, i->fabric_handle, b3, sizeof(b3)),
          probe_fact_text(p, i->multicast, b4, sizeof(b4)),
          probe_fact_text(p, i->gpu_direct_rdma, b5, sizeof(b5)));
  fprintf(out, "         peer access:");
  for (int peer = 0; peer < i->peer_count; peer++) {
    if (peer == i->ordinal) continue;
    fprintf(out, " GPU %d %s", peer, probe_fact_text(p, i->peer_access[peer], b1, sizeof(b1)));
  }
  fprintf(out, "%s\n", i->peer_count <= 1 ? " (no other device)" : "");
}

static void print_cuda(probe *p, FILE *out) {
  ncclshim_cuda *cuda = p->cuda;
  char version[16];
  if (!print_unavailable(out, "CUDA driver", ncclshim_cuda_status(cuda),
                         ncclshim_cuda_message(cuda))) {
    fprintf(out, "CUDA driver: %s\n",
            ncclshim_cuda_format_version(ncclshim_cuda_driver_version(cuda, NULL, NULL), version,
                                         sizeof(version)));
    print_path(out, ncclshim_cuda_path(cuda));
  }
  if (p->devices_skipped != NULL) {
    fprintf(out, "  devices:    %s\n", p->devices_skipped);
  } else {
    fprintf(out, "  devices:    %d\n", p->device_count);
    for (int d = 0; d < p->device_count; d++) print_device(p, out, &p->devices[d]);
  }
  if (p->verbose) print_trail(out, cuda_attempt, cuda, ncclshim_cuda_attempt_count(cuda));
}

void probe_print_text(probe *p, FILE *out) {
  fprintf(out, "ncclshim %s\n", ncclshim_library_version());
  print_nccl(p, out);
  probe_text_visible(p, out);
  probe_text_plugins(p, out);
  print_cuda(p, out);
  fprintf(out, "driver vs NCCL: %s (%s)\n", probe_driver_verdict_name(p->driver.verdict),
          p->driver.reason);
  fprintf(out, "fingerprint: %s\n", p->fingerprint);
  if (p->verify)
    fprintf(out, "fingerprint of the file's bytes (--verify): %s\n", p->fingerprint_content);
}
