#include "report_inventory.h"

#include <string.h>

#include "json.h"
#include "ncclshim/cuda.h"
#include "text.h"

static void print_copy_line(const inventory *inv, const nccl_copy *c, const char *symbol,
                            FILE *out) {
  char version[48], where[4200];
  fprintf(out, "    ");
  if (symbol) fprintf(out, "%-6s ", elf_facts_defines(&c->facts, symbol) ? "has" : "lacks");
  fprintf(out, "%-20s ", copy_version_text(c, version, sizeof(version)));
  text_put(out, c->path, 0);
  fprintf(out, "  [");
  text_put(out, copy_where(inv, c, where, sizeof(where)), 0);
  fprintf(out, "]");
  if (c->facts.glibc_need[0]) fprintf(out, " needs %s", c->facts.glibc_need);
  if (!c->usable) {
    fprintf(out, " UNUSABLE: ");
    text_put(out, c->unusable, 0);
  }
  fputc('\n', out);
}

void inventory_print_text(const inventory *inv, const char *symbol, FILE *out) {
  fprintf(out, "  NCCLs visible (%zu)%s\n", inv->count, inv->count ? ":" : ": none");
  for (size_t i = 0; i < inv->count; i++) print_copy_line(inv, &inv->copies[i], symbol, out);
}

static void print_winner(const inventory *inv, int at, const char *symbol, FILE *out) {
  if (at < 0) {
    fprintf(out, "none\n");
    return;
  }
  const nccl_copy *c = &inv->copies[at];
  char version[48];
  text_put(out, c->path, 0);
  fprintf(out, " (%s)", copy_version_text(c, version, sizeof(version)));
  if (symbol) fprintf(out, ": %s it", elf_facts_defines(&c->facts, symbol) ? "has" : "lacks");
  fputc('\n', out);
}

void inventory_print_winners_text(const inventory *inv, const char *symbol, FILE *out) {
  fprintf(out, "  a plain process loads:  ");
  if (inv->plain < 0 && inv->plain_error[0]) {
    fprintf(out, "nothing: the loader fails: ");
    text_put(out, inv->plain_error, 0);
    fputc('\n', out);
  } else {
    print_winner(inv, inv->plain, symbol, out);
  }
  if (inv->plain_source && strcmp(inv->plain_source, "loader") != 0)
    fprintf(out, "    (%s)\n", inv->plain_source);
  fprintf(out, "  ncclshim's search takes: ");
  print_winner(inv, inv->ncclshim, symbol, out);
  if (inv->ncclshim >= 0)
    fprintf(out, "    (step %s: %s)\n", ncclshim_found_via_name(inv->copies[inv->ncclshim].how),
            inv->copies[inv->ncclshim].reason);
  for (size_t e = 0; e < inv->env_count; e++) {
    fprintf(out, "  Python of ");
    text_put(out, inv->envs[e].prefix, 0);
    fprintf(out, " loads: ");
    print_winner(inv, inventory_env_winner(inv, e), symbol, out);
  }
}

static const char *path_of(const inventory *inv, int at) {
  return at >= 0 ? inv->copies[at].path : NULL;
}

void inventory_print_json(const inventory *inv, const char *symbol, FILE *out) {
  char version[48], v[16];
  fputs("\"copies\": [", out);
  for (size_t i = 0; i < inv->count; i++) {
    const nccl_copy *c = &inv->copies[i];
    json_member(out, i ? ", {" : "{", "path", c->path);
    json_member(out, ", ", "version",
                c->version ? ncclshim_format_version(c->version, v, sizeof(v)) : NULL);
    json_member(out, ", ", "version_source", c->version_source);
    json_member(out, ", ", "build", c->facts.build);
    json_member(out, ", ", "found_via",
                c->search_rank >= 0 ? ncclshim_found_via_name(c->how) : NULL);
    json_member(out, ", ", "python_env", c->env >= 0 ? inv->envs[c->env].prefix : NULL);
    json_member(out, ", ", "glibc_need", c->facts.glibc_need[0] ? c->facts.glibc_need : NULL);
    fprintf(out, ", \"mapped\": %s, \"usable\": %s", c->mapped ? "true" : "false",
            c->usable ? "true" : "false");
    json_member(out, ", ", "unusable_reason", c->usable ? NULL : c->unusable);
    if (symbol)
      fprintf(out, ", \"has_symbol\": %s", elf_facts_defines(&c->facts, symbol) ? "true" : "false");
    fputc('}', out);
  }
  json_member(out, "], ", "plain_process", path_of(inv, inv->plain));
  json_member(out, ", ", "plain_process_source", inv->plain_source);
  json_member(out, ", ", "plain_process_error",
              inv->plain_error[0] && inv->plain < 0 ? inv->plain_error : NULL);
  json_member(out, ", ", "ncclshim", path_of(inv, inv->ncclshim));
  fputs(", \"python_envs\": [", out);
  for (size_t e = 0; e < inv->env_count; e++) {
    const py_env *env = &inv->envs[e];
    json_member(out, e ? ", {" : "{", "prefix", env->prefix);
    json_member(out, ", ", "found_by", env->why);
    json_member(out, ", ", "loads", path_of(inv, inventory_env_winner(inv, e)));
    json_member(out, ", ", "conda_lib", env->conda_lib);
    fputs(", \"wheel_files\": [", out);
    for (size_t w = 0; w < env->wheel_count; w++) {
      if (w) fputs(", ", out);
      json_string(out, env->wheel_files[w]);
    }
    fputs("], \"packages\": [", out);
    for (size_t r = 0; r < env->record_count; r++) {
      json_member(out, r ? ", {" : "{", "name", env->records[r].name);
      json_member(out, ", ", "version", env->records[r].version);
      fputc('}', out);
    }
    fputs("]}", out);
  }
  fprintf(out, "], \"host_glibc\": \"%d.%d\", \"driver_cuda\": ", inv->host_glibc / 1000,
          inv->host_glibc % 1000);
  json_string(out, inv->driver_cuda > 0
                       ? ncclshim_cuda_format_version(inv->driver_cuda, version, sizeof(version))
                       : NULL);
}
