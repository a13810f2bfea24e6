/* --explain TEXT: what an error text means with this machine's facts, and what to change. */
#include "explain.h"

#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "ncclshim/cuda.h"
#include "parse_version.h"
#include "report_inventory.h"
#include "text.h"

typedef struct explanation {
  explain_parse parse;
  int since; /* the symbol's first release, from the function list; 0 unknown */
  int explained;
  char meaning[1024];
  char todo[1024];
} explanation;

static int symbol_since(const char *name) {
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
    if (strcmp(ncclshim_nccl_function_name(fn), name) == 0)
      return ncclshim_nccl_function_version(fn);
  return 0;
}

static int function_index(const char *name) {
  for (int fn = 0; fn < NCCLSHIM_NCCL_FUNCTION_COUNT; fn++)
    if (strcmp(ncclshim_nccl_function_name(fn), name) == 0) return fn;
  return -1;
}

static int has(const inventory *inv, int at, const char *symbol) {
  return at >= 0 && elf_facts_defines(&inv->copies[at].facts, symbol);
}

static const char *vtext(const inventory *inv, int at, char *buf, size_t size) {
  return at >= 0 ? copy_version_text(&inv->copies[at], buf, size) : "none";
}

/* The file the text says needed what was missing, "a library" when it names none. */
static const char *required_by(const explanation *x) {
  return x->parse.required_by[0] ? x->parse.required_by : "a library";
}

static const char *dir_of(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s", path);
  return dirname(buf);
}

/* An environment with two NCCL package records (cu12 and cu13 wheels), -1 when none. */
static int doubled_env(const inventory *inv) {
  for (size_t e = 0; e < inv->env_count; e++)
    if (inv->envs[e].record_count > 1) return (int)e;
  return -1;
}

/* "nvidia-nccl-cu12 2.29.3, nvidia-nccl-cu13 2.29.7" */
static void records_text(const py_env *env, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t r = 0; r < env->record_count && used < size; r++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s %s", r ? ", " : "",
                             env->records[r].name, env->records[r].version);
}

static void explain_symbol(const inventory *inv, explanation *x) {
  const char *sym = x->parse.symbol;
  char since[32], v1[48], v2[48], dir[PATH_MAX];
  x->since = symbol_since(sym);
  ncclshim_format_version(x->since, since, sizeof(since));
  int first_has = -1;
  for (size_t i = 0; i < inv->count && first_has < 0; i++)
    if (has(inv, (int)i, sym)) first_has = (int)i;
  if (x->since && ncclshim_nccl_function_required(function_index(sym))) {
    snprintf(x->meaning, sizeof(x->meaning),
             "%s is in every NCCL 2.x release: what the failing program resolved is no complete "
             "NCCL (a stub, a wrapper, a broken copy), or the name was looked up before any NCCL "
             "was loaded (a library without DT_NEEDED libnccl.so.2, loaded RTLD_LOCAL)",
             sym);
    x->explained = 1;
    int lacking = -1;
    for (size_t i = 0; i < inv->count && lacking < 0; i++)
      if (!has(inv, (int)i, sym)) lacking = (int)i;
    if (lacking >= 0)
      snprintf(x->todo, sizeof(x->todo),
               "%s lacks it: remove or reinstall it; then see what the failing process maps with "
               "`python -m ncclshim --loaded` inside it",
               inv->copies[lacking].path);
    else
      snprintf(x->todo, sizeof(x->todo),
               "Every NCCL here has it: make the failing library link libnccl.so.2 (DT_NEEDED) or "
               "load NCCL first, and check what the process maps with ncclshim.loaded()");
    return;
  }
  if (x->since)
    snprintf(x->meaning, sizeof(x->meaning),
             "%s is in NCCL from %s on; the NCCL the failing program resolved lacks it (an older "
             "release, or another copy than the one it was built against)",
             sym, since);
  else
    snprintf(x->meaning, sizeof(x->meaning),
             "%s is not in ncclshim's list of NCCL functions (a private, plugin or newer "
             "function); the NCCL the failing program resolved lacks it",
             sym);
  x->explained = 1;
  int env = doubled_env(inv);
  if (env >= 0 && !has(inv, inventory_env_winner(inv, (size_t)env), sym)) {
    char records[256];
    records_text(&inv->envs[env], records, sizeof(records));
    snprintf(x->todo, sizeof(x->todo),
             "%s has two NCCL wheels (%s) writing the same nvidia/nccl/lib/libnccl.so.2; the file "
             "left is %s, which lacks it: pip uninstall -y the NCCL packages there and pip "
             "install only the one your framework needs (%s or newer)",
             inv->envs[env].prefix, records,
             vtext(inv, inventory_env_winner(inv, (size_t)env), v1, sizeof(v1)),
             x->since ? since : "the newest");
  } else if (first_has < 0) {
    snprintf(x->todo, sizeof(x->todo),
             "No NCCL on this machine has %s: install NCCL %s (pip install -U nvidia-nccl-cu13, "
             "or cu12, matching your framework's CUDA; or the system's libnccl2)",
             sym, x->since ? strcat(since, " or newer") : "with it");
  } else if (inv->plain >= 0 && !has(inv, inv->plain, sym)) {
    snprintf(x->todo, sizeof(x->todo),
             "A program loading libnccl.so.2 by name gets %s (%s, %s), which lacks it, and if it "
             "loads first the whole process uses it: put %s first on LD_LIBRARY_PATH (it has %s, "
             "%s), or upgrade or remove %s",
             inv->copies[inv->plain].path, vtext(inv, inv->plain, v1, sizeof(v1)),
             ncclshim_found_via_name(inv->copies[inv->plain].how),
             dir_of(inv->copies[first_has].path, dir, sizeof(dir)), sym,
             vtext(inv, first_has, v2, sizeof(v2)), inv->copies[inv->plain].path);
  } else {
    for (size_t e = 0; e < inv->env_count; e++) {
      int w = inventory_env_winner(inv, e);
      if (w >= 0 && !has(inv, w, sym)) {
        snprintf(x->todo, sizeof(x->todo),
                 "Python in %s loads its wheel's %s, which lacks it: pip install -U its NCCL "
                 "package there (to %s or newer)",
                 inv->envs[e].prefix, vtext(inv, w, v1, sizeof(v1)),
                 x->since ? since : "a release with it");
        return;
      }
    }
    snprintf(x->todo, sizeof(x->todo),
             "Every NCCL a process here would load has %s: the failing process mapped another "
             "copy first (an earlier import, LD_PRELOAD, a RUNPATH); run `python -m ncclshim` "
             "(ncclshim.loaded()) inside it to see which",
             sym);
  }
}

static void explain_glibc(const inventory *inv, explanation *x) {
  int need = probe_parse_glibc(x->parse.glibc);
  /* Another file than the one named: that one is what failed. */
  char *named = x->parse.required_by[0] ? realpath(x->parse.required_by, NULL) : NULL;
  int fitting = -1;
  for (size_t i = 0; i < inv->count && fitting < 0; i++)
    if (inv->copies[i].usable && inv->copies[i].facts.glibc_need_packed <= inv->host_glibc &&
        (named == NULL || strcmp(named, inv->copies[i].path) != 0))
      fitting = (int)i;
  free(named);
  snprintf(x->meaning, sizeof(x->meaning),
           "%s needs glibc %d.%d or newer (%s); this host's glibc is %d.%d%s", required_by(x),
           need / 1000, need % 1000, x->parse.glibc, inv->host_glibc / 1000, inv->host_glibc % 1000,
           need > inv->host_glibc ? ": it cannot load here"
                                  : " (enough here: the text came from "
                                    "another host or container)");
  char v[48];
  if (fitting >= 0)
    snprintf(x->todo, sizeof(x->todo),
             "Use an NCCL built for glibc <= %d.%d: %s (%s) fits this host (point "
             "NCCLSHIM_NCCL_LIBRARY or LD_LIBRARY_PATH at it), or run on a newer OS release",
             inv->host_glibc / 1000, inv->host_glibc % 1000, inv->copies[fitting].path,
             vtext(inv, fitting, v, sizeof(v)));
  else
    snprintf(x->todo, sizeof(x->todo),
             "Install an NCCL built for this OS release (glibc %d.%d; the nvidia-nccl-cu12/cu13 "
             "wheels are manylinux builds, made for old glibc releases), or run on a newer OS "
             "release",
             inv->host_glibc / 1000, inv->host_glibc % 1000);
  x->explained = 1;
}

static void explain_mismatch(const inventory *inv, explanation *x) {
  char a[16], b[16];
  if (x->parse.versions[0] && x->parse.versions[1])
    snprintf(x->meaning, sizeof(x->meaning),
             "rank %d runs NCCL %s and rank %d runs NCCL %s: NCCL refuses to make one "
             "communicator of different releases",
             x->parse.ranks[0], ncclshim_format_version(x->parse.versions[0], a, sizeof(a)),
             x->parse.ranks[1], ncclshim_format_version(x->parse.versions[1], b, sizeof(b)));
  else
    snprintf(x->meaning, sizeof(x->meaning),
             "the ranks run different NCCL releases: NCCL refuses to make one communicator of "
             "them");
  int differ = inv->plain >= 0 && inv->ncclshim >= 0 &&
               inv->copies[inv->plain].version != inv->copies[inv->ncclshim].version;
  for (size_t e = 0; e < inv->env_count; e++) {
    int w = inventory_env_winner(inv, e);
    if (w >= 0 && inv->plain >= 0 && inv->copies[w].version != inv->copies[inv->plain].version)
      differ = 1;
  }
  snprintf(x->todo, sizeof(x->todo),
           "Make every rank load the same file: the same wheel on every host, or "
           "NCCLSHIM_NCCL_LIBRARY=<path>; compare `ncclshim-probe --json` fingerprints across "
           "hosts before starting%s",
           differ ? ". On this host alone, a plain process and a Python process load different "
                    "releases (below), so ranks started differently disagree here too"
                  : "");
  x->explained = 1;
}

static void explain_not_found(const inventory *inv, explanation *x) {
  char dir[PATH_MAX], quoted[2 * PATH_MAX], v[48];
  x->explained = 1;
  if (inv->plain >= 0) { /* the loader here finds one: the failing process was elsewhere */
    const nccl_copy *plain = &inv->copies[inv->plain];
    snprintf(x->meaning, sizeof(x->meaning),
             "the failing process's loader found no libnccl.so.2, but here a plain process maps "
             "%s (%s), as the dynamic loader says: the failing one ran with another environment "
             "(LD_LIBRARY_PATH, a container, a service's cleaned environment) or another root",
             plain->path, vtext(inv, inv->plain, v, sizeof(v)));
    snprintf(x->todo, sizeof(x->todo),
             "Run the failing program with this environment, or give it the file: "
             "NCCLSHIM_NCCL_LIBRARY=%s",
             text_shell_quote(plain->path, quoted, sizeof(quoted)));
    return;
  }
  if (inv->plain_error[0] && strcmp(inv->plain_source, "loader") == 0) {
    snprintf(x->meaning, sizeof(x->meaning),
             "the dynamic loader stops at a broken libnccl.so.2 here: %s", inv->plain_error);
    snprintf(x->todo, sizeof(x->todo), "Remove or replace %s",
             inv->plain_error_file[0] ? inv->plain_error_file : "that file");
    return;
  }
  snprintf(x->meaning, sizeof(x->meaning),
           "the dynamic loader finds no libnccl.so.2 on LD_LIBRARY_PATH, the program's RUNPATH, "
           "the ld.so cache or its default directories (here too)");
  int pick = inv->ncclshim;
  for (size_t i = 0; i < inv->count && pick < 0; i++)
    if (inv->copies[i].usable) pick = (int)i;
  if (pick >= 0)
    snprintf(
        x->todo, sizeof(x->todo),
        "An NCCL is here but off the loader's path: export "
        "LD_LIBRARY_PATH=%s\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\" (it holds %s), or give "
        "its path with NCCLSHIM_NCCL_LIBRARY",
        text_shell_quote(dir_of(inv->copies[pick].path, dir, sizeof(dir)), quoted, sizeof(quoted)),
        vtext(inv, pick, v, sizeof(v)));
  else if (inv->count > 0)
    snprintf(x->todo, sizeof(x->todo),
             "The NCCL files here cannot serve (%s: %s): reinstall NCCL (pip install "
             "--force-reinstall nvidia-nccl-cu13, or cu12; or the system's libnccl2)",
             inv->copies[0].path, inv->copies[0].unusable);
  else
    snprintf(x->todo, sizeof(x->todo),
             "No NCCL is on this machine: install one (pip install nvidia-nccl-cu13, or cu12; or "
             "the system's libnccl2 package)");
}

/* Explained with texts this machine's facts do not change: what to do, and the meaning as
 * printf formats it. */
static void explain_fixed(explanation *x, const char *todo, const char *meaning, ...)
    __attribute__((format(printf, 3, 4)));
static void explain_fixed(explanation *x, const char *todo, const char *meaning, ...) {
  va_list args;
  va_start(args, meaning);
  vsnprintf(x->meaning, sizeof(x->meaning), meaning, args);
  va_end(args);
  snprintf(x->todo, sizeof(x->todo), "%s", todo);
  x->explained = 1;
}

static void explain_internal(const inventory *inv, explanation *x) {
  (void)inv;
  explain_fixed(x,
                "Use the NCCL build the failing library was built with (the one its package "
                "requires), or a build of that library for this NCCL; another NCCL release is no "
                "fix",
                "%s is no function of NCCL's API but one of its internals (or a plugin's): a "
                "library built against one NCCL build's insides (a net plugin, a framework's own "
                "copy) met another build",
                x->parse.symbol);
}

static void explain_cxx(const inventory *inv, explanation *x) {
  (void)inv;
  explain_fixed(x,
                "Load a newer libstdc++ first: in conda, install libstdcxx-ng and use the "
                "environment's lib/; elsewhere a newer GCC runtime package, or LD_PRELOAD its "
                "libstdc++.so.6",
                "%s needs the C++ runtime's %s, which this process's libstdc++.so.6 lacks (an "
                "older one was loaded first, often the system's): no NCCL problem, and another "
                "NCCL does not fix it",
                required_by(x), x->parse.glibc);
}

static void explain_glibc_private(const inventory *inv, explanation *x) {
  (void)inv;
  explain_fixed(x,
                "Run with one glibc: drop the LD_LIBRARY_PATH entry that holds a libc.so.6 or "
                "ld-linux of its own, or run inside the container the library came with",
                "%s was linked against the private interface of another glibc build: two glibc "
                "copies are mixed in one process (a container's or a conda environment's "
                "libc.so.6 or ld.so beside the host's)",
                required_by(x));
}

static void explain_cuda(const inventory *inv, explanation *x) {
  char have[16];
  snprintf(x->meaning, sizeof(x->meaning),
           "a CUDA error, not a missing NCCL function: \"named symbol not found\" is CUDA's word "
           "for a kernel image this GPU cannot run (a build without this GPU's architecture) "
           "or a driver older than the build; other CUDA errors name the device or driver");
  if (inv->driver_cuda > 0)
    snprintf(x->todo, sizeof(x->todo),
             "Compare each NCCL's CUDA build (below) with the driver's CUDA %s, and use an NCCL "
             "built for this GPU and driver (run with NCCL_DEBUG=INFO for the failing call)",
             ncclshim_cuda_format_version(inv->driver_cuda, have, sizeof(have)));
  else
    snprintf(x->todo, sizeof(x->todo),
             "Run this on the GPU host: compare each NCCL's CUDA build with the driver's, and "
             "use an NCCL built for that GPU and driver (NCCL_DEBUG=INFO shows the call)");
  x->explained = 1;
}

static void explain_plugin(const inventory *inv, explanation *x) {
  (void)inv;
  snprintf(x->meaning, sizeof(x->meaning),
           "NCCL looked for an optional plugin (libnccl-net.so, libnccl-tuner.so, ...) and "
           "found none: a routine INFO line, not a missing NCCL; NCCL goes on with its own "
           "network transports and tuning");
  snprintf(x->todo, sizeof(x->todo),
           "Nothing, unless you installed that plugin: then put its directory on "
           "LD_LIBRARY_PATH or name it in NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN "
           "(ncclshim-probe lists the plugins NCCL would load)");
  x->explained = 1;
}

static void explain_unknown(const inventory *inv, explanation *x) {
  (void)inv;
  snprintf(x->meaning, sizeof(x->meaning),
           "cannot tell: this text names no NCCL function, glibc version, NCCL version mismatch "
           "or missing libnccl.so.2 that ncclshim knows");
  snprintf(x->todo, sizeof(x->todo),
           "Give the whole error line (the dynamic loader's or NCCL's WARN line); below is every "
           "NCCL visible here");
}

#define EXPLAINER_(id, name, explainer) explainer,
static void (*const explainers[])(const inventory *, explanation *) = {EXPLAIN_KINDS(EXPLAINER_)};
#undef EXPLAINER_

static void explain_run(const inventory *inv, explanation *x) {
  explain_kind kind = x->parse.kind;
  explainers[(unsigned)kind < EXPLAIN_KIND_COUNT ? kind : EXPLAIN_UNKNOWN](inv, x);
}

/* The NCCL name the text gives, API function or internal one; NULL for other kinds. */
static const char *named_symbol(const explanation *x) {
  return x->parse.kind == EXPLAIN_UNDEFINED_SYMBOL || x->parse.kind == EXPLAIN_INTERNAL_SYMBOL
             ? x->parse.symbol
             : NULL;
}

static void print_text(const inventory *inv, const explanation *x, FILE *out) {
  const char *symbol = named_symbol(x);
  char since[16];
  fprintf(out, "explain: %s", explain_kind_name(x->parse.kind));
  if (symbol) {
    fprintf(out, " ");
    text_put(out, symbol, 0);
    fprintf(out, " (first in NCCL %s)",
            x->since ? ncclshim_format_version(x->since, since, sizeof(since)) : "unknown");
  }
  fprintf(out, "\n  meaning: ");
  text_put(out, x->meaning, 0);
  fprintf(out, "\n");
  inventory_print_text(inv, symbol, out);
  inventory_print_winners_text(inv, symbol, out);
  fprintf(out, "  what to do: ");
  text_put(out, x->todo, 0);
  fprintf(out, "\n");
}

static void print_json(const inventory *inv, const explanation *x, const char *input, FILE *out) {
  const char *symbol = named_symbol(x);
  char since[16];
  json_member(out, "{\"explain\": {", "input", input);
  json_member(out, ", ", "kind", explain_kind_name(x->parse.kind));
  fprintf(out, ", \"explained\": %s", x->explained ? "true" : "false");
  json_member(out, ", ", "symbol", symbol);
  json_member(out, ", ", "since",
              x->since ? ncclshim_format_version(x->since, since, sizeof(since)) : NULL);
  json_member(out, ", ", "glibc",
              x->parse.kind == EXPLAIN_GLIBC || x->parse.kind == EXPLAIN_CXX_RUNTIME ||
                      x->parse.kind == EXPLAIN_GLIBC_PRIVATE
                  ? x->parse.glibc
                  : NULL);
  json_member(out, ", ", "meaning", x->meaning);
  json_member(out, ", ", "what_to_do", x->todo);
  fputs(", ", out);
  inventory_print_json(inv, symbol, out);
  fputs("}}\n", out);
}

int probe_explain(const inventory *inv, const char *text, int json, FILE *out) {
  explanation x = {0};
  explain_classify(text, &x.parse);
  explain_run(inv, &x);
  if (json)
    print_json(inv, &x, text, out);
  else
    print_text(inv, &x, out);
  return x.explained ? 0 : 1;
}
