/* ncclshim-probe --explain TEXT and --doctor: what an NCCL error text means on this machine,
 * and every NCCL here with what is wrong. */
#ifndef NCCLSHIM_PROBE_EXPLAIN_H
#define NCCLSHIM_PROBE_EXPLAIN_H

#include <stdio.h>

/* The options of these two modes, read by probe.c's argument loop. */
typedef struct doctor_args {
  const char *explain; /* --explain TEXT */
  int doctor;          /* --doctor */
  char **pythons;      /* --python PREFIX, repeatable */
  int python_count;
} doctor_args;

/* Reads argv[*i] when it is one of these options (its value too, advancing *i): returns 1,
 * 0 when the option is not one of them, -1 when its value is missing or memory ran out. */
int doctor_parse_option(int argc, char **argv, int *i, doctor_args *a);
/* Runs the mode asked for (exit status as below), or returns -1 when neither was asked. */
int doctor_run(const doctor_args *a, int json, FILE *out);

/* The kinds of text --explain recognises. */
typedef enum explain_kind {
  EXPLAIN_UNKNOWN,
  EXPLAIN_UNDEFINED_SYMBOL, /* "undefined symbol: ncclX", a dlsym/dlerror line */
  EXPLAIN_GLIBC,            /* "version `GLIBC_2.34' not found (required by ...)" */
  EXPLAIN_VERSION_MISMATCH, /* NCCL's "Mismatched NCCL version detected : rank ..." */
  EXPLAIN_NOT_FOUND,        /* "libnccl.so.2: cannot open shared object file" */
  EXPLAIN_INTERNAL_SYMBOL,  /* an undefined ncclX that is no function of NCCL's API */
  EXPLAIN_CXX_RUNTIME,      /* "version `GLIBCXX_3.4.32' not found", CXXABI_: libstdc++ */
  EXPLAIN_GLIBC_PRIVATE,    /* "version `GLIBC_PRIVATE' not found": two glibc copies mixed */
  EXPLAIN_CUDA              /* a CUDA error ("Cuda failure 'named symbol not found'") */
} explain_kind;

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
/* "undefined-symbol", "glibc", "version-mismatch", "not-found", "internal-symbol",
 * "cxx-runtime", "glibc-private", "cuda", "unknown". */
const char *explain_kind_name(explain_kind kind);

/* Runs --explain: the report on out; exit status 0 explained, 1 cannot tell, 2 could not run. */
int probe_explain(const doctor_args *a, int json, FILE *out);
/* Runs --doctor: exit status 0 nothing wrong, 1 a problem found, 2 could not run. */
int probe_doctor(const doctor_args *a, int json, FILE *out);

#endif
