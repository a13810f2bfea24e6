/* The probe's census (every NCCL mapped in this process) and list of every NCCL the search can
 * see, as text and as JSON members, for the two reports to call. */
#include <stdio.h>

#include "ncclshim/diag.h"
#include "json.h"
#include "probe.h"
#include "report_census.h"
#include "text.h"

static const char *version_text(int packed, char *buf, size_t size) {
  return packed > 0 ? ncclshim_format_version(packed, buf, size) : "unknown";
}

void probe_text_census(const probe *p, FILE *out) {
  size_t count = ncclshim_nccl_census_count(p->nccl);
  if (count == 0) return;
  fprintf(out, "  in process: %zu NCCL%s%s\n", count, count == 1 ? "" : "s",
          count > 1 ? " (WARNING: a communicator of one is garbage to another)" : "");
  for (size_t i = 0; count > 1 && i < count; i++) {
    const ncclshim_nccl_entry *e = ncclshim_nccl_census_entry(p->nccl, i);
    char version[16];
    fprintf(out, "    %-9s ", version_text(e->version, version, sizeof(version)));
    text_put(out, e->path, 0);
    fprintf(out, "%s%s\n", e->in_program ? " (linked into the program)" : "",
            e->chosen ? " (chosen)" : "");
  }
}

void probe_text_visible(const probe *p, FILE *out) {
  ncclshim_nccl_list *list = NULL;
  if (ncclshim_nccl_list_visible(p->nccl, &list) != NCCLSHIM_OK) {
    fprintf(out, "NCCL libraries visible: not listed (");
    text_put(out, ncclshim_last_error(), 0);
    fprintf(out, ")\n");
    return;
  }
  size_t count = ncclshim_nccl_list_count(list);
  fprintf(out, "NCCL libraries visible: %zu%s\n", count, count ? "" : " (none)");
  for (size_t i = 0; i < count; i++) {
    const ncclshim_nccl_entry *e = ncclshim_nccl_list_entry(list, i);
    char version[16];
    fprintf(out, "  %s %-9s %-18s ", e->chosen ? "*" : " ",
            version_text(e->version, version, sizeof(version)), ncclshim_found_via_name(e->how));
    text_put(out, e->path, 0);
    fprintf(out, "%s%s\n", e->mapped ? " (mapped)" : "", e->in_program ? " (in the program)" : "");
  }
  ncclshim_nccl_list_free(list);
}

static void json_entry(FILE *out, const ncclshim_nccl_entry *e, int with_how) {
  char version[16];
  fputs("{\"path\": ", out);
  json_string(out, e->path);
  fputs(", \"version\": ", out);
  json_string(
      out, e->version > 0 ? ncclshim_format_version(e->version, version, sizeof(version)) : NULL);
  if (with_how) fprintf(out, ", \"found_via\": \"%s\"", ncclshim_found_via_name(e->how));
  fprintf(out, ", \"mapped\": %s, \"in_program\": %s, \"chosen\": %s}",
          e->mapped ? "true" : "false", e->in_program ? "true" : "false",
          e->chosen ? "true" : "false");
}

void probe_json_census(const probe *p, FILE *out) {
  fputs("\"census\": [", out);
  for (size_t i = 0; i < ncclshim_nccl_census_count(p->nccl); i++) {
    if (i) fputs(", ", out);
    json_entry(out, ncclshim_nccl_census_entry(p->nccl, i), 0);
  }
  fputs("], \"visible\": [", out);
  ncclshim_nccl_list *list = NULL;
  if (ncclshim_nccl_list_visible(p->nccl, &list) == NCCLSHIM_OK) {
    for (size_t i = 0; i < ncclshim_nccl_list_count(list); i++) {
      if (i) fputs(", ", out);
      json_entry(out, ncclshim_nccl_list_entry(list, i), 1);
    }
  }
  ncclshim_nccl_list_free(list);
  fputc(']', out);
}
