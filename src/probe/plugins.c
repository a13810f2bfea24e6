/* The probe's plugin report: every plugin NCCL would try, the ABI versions its file exports,
 * and whether the loaded NCCL takes one; and --require plugins-compatible. */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "probe.h"
#include "text.h"

void probe_gather_plugins(probe *p) {
  if (ncclshim_nccl_plugins(p->nccl, &p->plugins) != NCCLSHIM_OK) p->plugins = NULL;
}

void probe_text_plugins(const probe *p, FILE *out) {
  if (p->plugins == NULL) {
    fprintf(out, "NCCL plugins: not listed (out of memory)\n");
    return;
  }
  fprintf(out, "NCCL plugins:\n");
  for (size_t i = 0; i < ncclshim_plugin_list_count(p->plugins); i++) {
    const ncclshim_plugin *e = ncclshim_plugin_list_entry(p->plugins, i);
    fprintf(out, "  %-8s %-10s ", ncclshim_plugin_kind_name(e->kind),
            ncclshim_plugin_verdict_name(e->verdict));
    text_put(out, e->path ? e->path : e->requested, 0);
    if (e->exports[0] != '\0') {
      fprintf(out, "\n           exports: ");
      text_put(out, e->exports, 0);
    }
    fprintf(out, "\n           ");
    text_put(out, e->reason, 0);
    fputc('\n', out);
  }
}

void probe_json_plugins(const probe *p, FILE *out) {
  fputs("\"plugins\": [", out);
  for (size_t i = 0; i < ncclshim_plugin_list_count(p->plugins); i++) {
    const ncclshim_plugin *e = ncclshim_plugin_list_entry(p->plugins, i);
    fprintf(out, "%s{\"kind\": \"%s\", \"variable\": \"%s\", \"requested\": ", i ? ", " : "",
            ncclshim_plugin_kind_name(e->kind), e->variable);
    json_string(out, e->requested);
    fputs(", \"path\": ", out);
    json_string(out, e->path);
    fputs(", \"exports\": [", out);
    const char *s = e->exports;
    for (int first = 1; *s;) {
      size_t n = strcspn(s, " ");
      fprintf(out, "%s\"%.*s\"", first ? "" : ", ", (int)n, s); /* table-shaped names only */
      first = 0;
      s += n + (s[n] == ' ');
    }
    fputs("], \"chosen\": ", out);
    json_string(out, e->chosen);
    fprintf(out, ", \"verdict\": \"%s\", \"reason\": ", ncclshim_plugin_verdict_name(e->verdict));
    json_string(out, e->reason);
    fputc('}', out);
  }
  fprintf(out, "], \"plugins_compatible\": %s",
          p->plugins && !ncclshim_plugin_list_has_problem(p->plugins) ? "true" : "false");
}

void probe_check_plugins(const probe *p, probe_requirement *r) {
  r->met = p->plugins != NULL && !ncclshim_plugin_list_has_problem(p->plugins);
  if (p->plugins == NULL) {
    snprintf(r->reason, sizeof(r->reason), "plugins not listed (out of memory)");
    return;
  }
  size_t used = 0;
  r->reason[0] = '\0';
  for (size_t i = 0; i < ncclshim_plugin_list_count(p->plugins); i++) {
    const ncclshim_plugin *e = ncclshim_plugin_list_entry(p->plugins, i);
    ncclshim_plugin_verdict v = e->verdict;
    if (r->met ? v != NCCLSHIM_PLUGIN_ACCEPTED
               : v == NCCLSHIM_PLUGIN_ACCEPTED || v == NCCLSHIM_PLUGIN_ABSENT ||
                     v == NCCLSHIM_PLUGIN_DISABLED || v == NCCLSHIM_PLUGIN_UNKNOWN)
      continue;
    int n =
        snprintf(r->reason + used, sizeof(r->reason) - used, "%s%s %s: %s", used ? "; " : "",
                 ncclshim_plugin_kind_name(e->kind), e->path ? e->path : e->requested, e->reason);
    if (n < 0 || (size_t)n >= sizeof(r->reason) - used) break;
    used += (size_t)n;
  }
  if (used == 0) snprintf(r->reason, sizeof(r->reason), "no plugin to load, NCCL's own are used");
}
