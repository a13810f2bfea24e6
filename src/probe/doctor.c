/* --doctor: every NCCL here, which one each kind of process loads, and each problem as one
 * finding with what to do. Exit status 0 nothing wrong, 1 a problem (error or warning). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "json.h"
#include "ncclshim/cuda.h"
#include "parse_version.h"
#include "report_inventory.h"
#include "text.h"

typedef enum severity { SEV_INFO, SEV_WARNING, SEV_ERROR } severity;
static const char *const severity_names[] = {"info", "warning", "error"};

typedef struct finding {
  severity level;
  char text[768];
  char todo[768];
} finding;

typedef struct findings {
  finding *items;
  size_t count;
  int problems;
} findings;

static finding *add(findings *f, severity level) {
  finding *grown = realloc(f->items, (f->count + 1) * sizeof(*grown));
  if (grown == NULL) return NULL;
  f->items = grown;
  finding *x = &grown[f->count++];
  x->level = level;
  x->text[0] = x->todo[0] = '\0';
  if (level != SEV_INFO) f->problems++;
  return x;
}

#define SAY(field, ...) snprintf(x->field, sizeof(x->field), __VA_ARGS__)

static void check_copy(const inventory *inv, const nccl_copy *c, findings *f) {
  finding *x;
  char v[48], have[16], built[16];
  copy_version_text(c, v, sizeof(v));
  if (!c->usable && (x = add(f, SEV_ERROR))) {
    SAY(text, "%s (%s) cannot serve as NCCL: %s", c->path, v, c->unusable);
    SAY(todo, "Reinstall or remove it: a program that finds it first fails to load NCCL");
  }
  if (c->false_banner && (x = add(f, SEV_WARNING))) {
    char claimed[16];
    ncclshim_format_version(c->false_banner, claimed, sizeof(claimed));
    if (c->later_function)
      SAY(text,
          "%s: its banner says NCCL %s, but it defines %s, which came later: the banner is "
          "false, the file is %s",
          c->path, claimed, c->later_function, v);
    else
      SAY(text,
          "%s: its banner says NCCL %s, but it lacks %s, which every NCCL since %s has: the "
          "banner is false, the file is %s",
          c->path, claimed, c->lacked_function,
          ncclshim_format_version(c->lacked_since, have, sizeof(have)), v);
    SAY(todo, "Reinstall it from its package: a patched or mislabelled build");
  }
  if (c->facts.glibc_need_packed > inv->host_glibc && (x = add(f, SEV_ERROR))) {
    SAY(text, "%s (%s) needs %s; this host has glibc %d.%d: it cannot load here", c->path, v,
        c->facts.glibc_need, inv->host_glibc / 1000, inv->host_glibc % 1000);
    SAY(todo, "Install an NCCL built for this OS release, or remove this one");
  }
  int cuda = probe_parse_cuda_tag(c->facts.build);
  if (cuda == 0 || inv->driver_cuda <= 0) return;
  ncclshim_cuda_format_version(cuda, built, sizeof(built));
  ncclshim_cuda_format_version(inv->driver_cuda, have, sizeof(have));
  if (inv->driver_cuda / 1000 < cuda / 1000 && (x = add(f, SEV_ERROR))) {
    SAY(text,
        "%s was built for CUDA %s; the driver supports CUDA %s: communicator init fails "
        "(driver version is insufficient)",
        c->path, built, have);
    SAY(todo, "Update the driver, or use an NCCL built for CUDA %d (the nvidia-nccl-cu%d wheel)",
        inv->driver_cuda / 1000, inv->driver_cuda / 1000);
  } else if (inv->driver_cuda < cuda && (x = add(f, SEV_WARNING))) {
    SAY(text,
        "%s was built for CUDA %s; the driver supports CUDA %s: it runs by minor version "
        "compatibility, features that need the newer driver fail",
        c->path, built, have);
    SAY(todo, "Update the driver to one supporting CUDA %s if a feature fails", built);
  }
}

static void check_env(const inventory *inv, size_t e, findings *f) {
  const py_env *env = &inv->envs[e];
  finding *x;
  char v[48], w[48];
  int winner = inventory_env_winner(inv, e);
  if (env->record_count > 1 && (x = add(f, SEV_ERROR))) {
    size_t used = (size_t)snprintf(x->text, sizeof(x->text), "%s has %zu NCCL wheels installed (",
                                   env->prefix, env->record_count);
    for (size_t r = 0; r < env->record_count && used < sizeof(x->text); r++)
      used += (size_t)snprintf(x->text + used, sizeof(x->text) - used, "%s%s %s", r ? ", " : "",
                               env->records[r].name, env->records[r].version);
    if (used < sizeof(x->text))
      snprintf(x->text + used, sizeof(x->text) - used,
               "); they write the same nvidia/nccl/lib/libnccl.so.2, the file left is %s",
               winner >= 0 ? copy_version_text(&inv->copies[winner], v, sizeof(v)) : "none");
    SAY(todo,
        "pip uninstall -y every nvidia-nccl-cu* package there, then pip install the one "
        "matching your framework's CUDA (%s)",
        inv->driver_cuda >= 13000 ? "cu13 with this driver" : "cu12 or cu13");
  } else if (env->record_count == 1 && winner >= 0 && inv->copies[winner].version &&
             strcmp(inv->copies[winner].version_source, "functions") != 0) {
    char file[16];
    ncclshim_format_version(inv->copies[winner].version, file, sizeof(file));
    if (strcmp(file, env->records[0].version) != 0 && (x = add(f, SEV_WARNING))) {
      SAY(text, "%s: the package record says %s %s, the file is %s", env->prefix,
          env->records[0].name, env->records[0].version, file);
      SAY(todo, "pip install --force-reinstall %s==%s", env->records[0].name,
          env->records[0].version);
    }
  }
  if (env->wheel_count > 1 && (x = add(f, SEV_WARNING))) {
    SAY(text, "%s holds %zu NCCL wheel files (%s first; also %s)", env->prefix, env->wheel_count,
        env->wheel_files[0], env->wheel_files[1]);
    SAY(todo, "Keep one NCCL package in this environment (pip uninstall the others)");
  }
  /* An unusable file fights nothing: its own finding says to replace it, and putting its
   * directory first would make every process fail on it. */
  if (winner >= 0 && inv->plain >= 0 && winner != inv->plain && inv->copies[winner].usable &&
      (x = add(f, SEV_WARNING))) {
    int from_wheel = env->wheel_count > 0;
    SAY(text,
        "two NCCLs will fight in a Python process of %s: its framework loads %s (%s) from "
        "%s, while anything loading libnccl.so.2 by name (CuPy, ctypes, a program "
        "without RUNPATH) gets %s (%s, %s); the first one loaded decides, or both end up "
        "mapped",
        env->prefix, inv->copies[winner].path,
        copy_version_text(&inv->copies[winner], v, sizeof(v)),
        from_wheel ? "the wheel" : "the conda environment's lib/ (its packages' RUNPATH)",
        inv->copies[inv->plain].path, copy_version_text(&inv->copies[inv->plain], w, sizeof(w)),
        ncclshim_found_via_name(inv->copies[inv->plain].how));
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", inv->copies[winner].path);
    char quoted[2 * PATH_MAX];
    SAY(todo,
        "Make them one: export LD_LIBRARY_PATH=%s\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" for "
        "that environment, or remove the other copy if nothing needs it",
        text_shell_quote(dirname(dir), quoted, sizeof(quoted)));
  }
}

/* What the dynamic loader maps for a plain process, against ncclshim's own choice: a failure
 * of the loader is an error; a disagreement is said with its cause. */
static void check_plain(const inventory *inv, findings *f) {
  finding *x;
  if (inv->plain < 0 && inv->plain_error[0] && strcmp(inv->plain_source, "loader") == 0 &&
      (x = add(f, SEV_ERROR))) {
    SAY(text, "a plain process fails to load libnccl.so.2: %s", inv->plain_error);
    if (inv->plain_error_file[0])
      SAY(todo,
          "Remove or replace %s: the dynamic loader stops at it, so every program loading "
          "libnccl.so.2 by name fails%s",
          inv->plain_error_file, inv->ncclshim >= 0 ? " (ncclshim's search skips it)" : "");
    else
      SAY(todo, "Run `ldd` on a program that needs libnccl.so.2 to see the file it stops at");
  } else if (inv->plain < 0 && inv->plain_error[0] && (x = add(f, SEV_INFO))) {
    SAY(text, "the dynamic loader could not be asked what a plain process loads: %s",
        inv->plain_error);
    SAY(todo, "Nothing; the doctor's other findings stand");
  }
  /* NCCL_HOME and CUDA_HOME are ncclshim's own places: nothing else looks there. */
  if (inv->plain < 0 && !inv->plain_error[0] && inv->ncclshim >= 0 &&
      inv->copies[inv->ncclshim].how == NCCLSHIM_VIA_WELL_KNOWN && (x = add(f, SEV_WARNING))) {
    char dir[PATH_MAX], quoted[2 * PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", inv->copies[inv->ncclshim].path);
    SAY(text,
        "a plain process loads no NCCL: only ncclshim's search finds %s (%s), so CuPy, ctypes "
        "and programs linked to libnccl.so.2 fail here",
        inv->copies[inv->ncclshim].path, ncclshim_found_via_name(inv->copies[inv->ncclshim].how));
    SAY(todo, "export LD_LIBRARY_PATH=%s\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" for them",
        text_shell_quote(dirname(dir), quoted, sizeof(quoted)));
  }
  if (inv->plain < 0 || inv->ncclshim == inv->plain) return;
  const nccl_copy *plain = &inv->copies[inv->plain];
  if (!plain->usable && (x = add(f, SEV_INFO))) {
    SAY(text, "a plain process maps %s, which ncclshim's search refuses (%s); ncclshim takes %s",
        plain->path, plain->unusable,
        inv->ncclshim >= 0 ? inv->copies[inv->ncclshim].path : "none");
    SAY(todo, "Put a usable NCCL before it, or remove it");
    return;
  }
  if (inv->ncclshim < 0 || !(x = add(f, SEV_INFO))) return;
  const nccl_copy *ours = &inv->copies[inv->ncclshim];
  if (plain->search_rank < 0)
    SAY(text,
        "a plain process maps %s, which ncclshim's search does not name (the loader found it "
        "itself: LD_PRELOAD, a relative or $LIB entry of LD_LIBRARY_PATH, or a default "
        "directory); ncclshim takes %s (%s)",
        plain->path, ours->path, ncclshim_found_via_name(ours->how));
  else
    SAY(text, "ncclshim's search takes %s (%s: %s) before %s, which a plain process maps (%s)",
        ours->path, ncclshim_found_via_name(ours->how), ours->reason, plain->path,
        ncclshim_found_via_name(plain->how));
  SAY(todo,
      "Nothing if that is intended: ncclshim's order is by design (docs/loader.md, "
      "search order); set NCCLSHIM_NCCL_LIBRARY to choose one file for both");
}

static void gather_findings(const inventory *inv, findings *f) {
  finding *x;
  if (inv->count == 0 && (x = add(f, SEV_WARNING))) {
    SAY(text,
        "no NCCL is visible: LD_LIBRARY_PATH, the ld.so cache, the Python environments and "
        "NCCL_HOME/CUDA_HOME hold none");
    SAY(todo, "Install NCCL (pip install nvidia-nccl-cu13, or cu12; or the system's libnccl2)");
  }
  for (size_t i = 0; i < inv->count; i++) check_copy(inv, &inv->copies[i], f);
  for (size_t e = 0; e < inv->env_count; e++) check_env(inv, e, f);
  if (inv->driver_cuda <= 0 && inv->count && (x = add(f, SEV_INFO))) {
    SAY(text, "no usable CUDA driver: the NCCLs' CUDA builds were not compared with it");
    SAY(todo, "Nothing, on a machine without GPUs");
  }
  check_plain(inv, f);
}

static void print_text(const inventory *inv, const findings *f, FILE *out) {
  char have[16];
  fprintf(out, "ncclshim doctor\n  host: glibc %d.%d, ", inv->host_glibc / 1000,
          inv->host_glibc % 1000);
  if (inv->driver_cuda > 0)
    fprintf(out, "CUDA driver %s\n",
            ncclshim_cuda_format_version(inv->driver_cuda, have, sizeof(have)));
  else
    fprintf(out, "no usable CUDA driver\n");
  inventory_print_text(inv, NULL, out);
  inventory_print_winners_text(inv, NULL, out);
  fprintf(out, "findings: %d problem%s\n", f->problems, f->problems == 1 ? "" : "s");
  for (size_t i = 0; i < f->count; i++) {
    fprintf(out, "  %-7s ", severity_names[f->items[i].level]);
    text_put(out, f->items[i].text, 0);
    fprintf(out, "\n          what to do: ");
    text_put(out, f->items[i].todo, 0);
    fputc('\n', out);
  }
  if (f->problems == 0) fprintf(out, "  ok      nothing wrong\n");
}

static void print_json(const inventory *inv, const findings *f, FILE *out) {
  fprintf(out, "{\"doctor\": {\"problems\": %d, \"findings\": [", f->problems);
  for (size_t i = 0; i < f->count; i++) {
    json_member(out, i ? ", {" : "{", "severity", severity_names[f->items[i].level]);
    json_member(out, ", ", "finding", f->items[i].text);
    json_member(out, ", ", "what_to_do", f->items[i].todo);
    fputc('}', out);
  }
  fputs("], ", out);
  inventory_print_json(inv, NULL, out);
  fputs("}}\n", out);
}

int probe_doctor(const inventory *inv, int json, FILE *out) {
  findings f = {0};
  gather_findings(inv, &f);
  if (json)
    print_json(inv, &f, out);
  else
    print_text(inv, &f, out);
  int status = f.problems ? 1 : 0;
  free(f.items);
  return status;
}
