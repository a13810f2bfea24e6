/* ncclshim-probe --explain TEXT and --doctor: what an NCCL error text means on this machine,
 * and every NCCL here with what is wrong. */
#ifndef NCCLSHIM_PROBE_EXPLAIN_H
#define NCCLSHIM_PROBE_EXPLAIN_H

#include <stdio.h>

#include "inventory.h"

/* The options of these two modes, read by probe.c's argument loop. */
typedef struct doctor_args {
  const char *explain; /* --explain TEXT */
  int doctor;          /* --doctor */
  char **pythons;      /* --python PREFIX, repeatable */
  int python_count;
} doctor_args;

/* Reads argv[*i] when it is one of these options (its value too, advancing *i): returns 1,
 * 0 when the option is not one of them, -1 when its value is missing or memory ran out, -2
 * when its value was refused (the usage error already printed). */
int doctor_parse_option(int argc, char **argv, int *i, doctor_args *a);
/* Gathers the inventory and runs the mode asked for (exit status as below; 2 when the
 * inventory could not be gathered), or returns -1 when neither was asked. */
int doctor_run(const doctor_args *a, int json, FILE *out);

/* The kinds of text --explain recognises, one row each: X(ID, "name", explainer). The enum,
 * explain_kind_name and explain.c's dispatch to the explainer (a function of explain.c) come
 * from it. The texts of each kind:
 *   UNKNOWN           none of those below
 *   UNDEFINED_SYMBOL  "undefined symbol: ncclX", a dlsym/dlerror line
 *   GLIBC             "version `GLIBC_2.34' not found (required by ...)"
 *   VERSION_MISMATCH  NCCL's "Mismatched NCCL version detected : rank ..."
 *   NOT_FOUND         "libnccl.so.2: cannot open shared object file"
 *   INTERNAL_SYMBOL   an undefined ncclX that is no function of NCCL's API
 *   CXX_RUNTIME       "version `GLIBCXX_3.4.32' not found", CXXABI_: libstdc++
 *   GLIBC_PRIVATE     "version `GLIBC_PRIVATE' not found": two glibc copies mixed
 *   CUDA              a CUDA error ("Cuda failure 'named symbol not found'")
 *   PLUGIN_ABSENT     NCCL's INFO line for a plugin it looked for and did not find
 *                     ("NET/Plugin: Plugin load (libnccl-net.so) returned 2 : ...") */
#define EXPLAIN_KINDS(X)                                    \
  X(UNKNOWN, "unknown", explain_unknown)                    \
  X(UNDEFINED_SYMBOL, "undefined-symbol", explain_symbol)   \
  X(GLIBC, "glibc", explain_glibc)                          \
  X(VERSION_MISMATCH, "version-mismatch", explain_mismatch) \
  X(NOT_FOUND, "not-found", explain_not_found)              \
  X(INTERNAL_SYMBOL, "internal-symbol", explain_internal)   \
  X(CXX_RUNTIME, "cxx-runtime", explain_cxx)                \
  X(GLIBC_PRIVATE, "glibc-private", explain_glibc_private)  \
  X(CUDA, "cuda", explain_cuda)                             \
  X(PLUGIN_ABSENT, "plugin-absent", explain_plugin)

#define EXPLAIN_KIND_ENUM_(id, name, explainer) EXPLAIN_##id,
typedef enum explain_kind { EXPLAIN_KINDS(EXPLAIN_KIND_ENUM_) EXPLAIN_KIND_COUNT } explain_kind;
#undef EXPLAIN_KIND_ENUM_

typedef struct explain_parse {
  explain_kind kind;
  char symbol[96]; /* ncclX (pnccl prefix removed) */
  char glibc[24];  /* GLIBC_2.34, GLIBCXX_3.4.32, CXXABI_1.3.15 */
  char required_by[512];
  int versions[2]; /* the two ranks' packed versions of a mismatch */
  int ranks[2];
} explain_parse;

/* Classifies `text`; fills what it names. */
void explain_classify(const char *text, explain_parse *out);
/* The kind's name (EXPLAIN_KINDS); "unknown" for a value outside the enum. */
const char *explain_kind_name(explain_kind kind);

/* Runs --explain TEXT over the inventory: the report on out; exit status 0 explained, 1 cannot
 * tell. */
int probe_explain(const inventory *inv, const char *text, int json, FILE *out);
/* Runs --doctor over the inventory: exit status 0 nothing wrong, 1 a problem found. */
int probe_doctor(const inventory *inv, int json, FILE *out);

#endif
