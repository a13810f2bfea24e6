/* Every NCCL on this machine as the doctor and --explain see it: the search's candidates
 * (candidates.c), each Python environment's wheels and package records (pyenv.c), each
 * file's own facts (elf_facts.c), and what a plain process maps, asked of the dynamic loader
 * itself (loader/trace.c: a traced stub, which maps but runs nothing). Nothing is loaded into
 * this process or run. */
#ifndef NCCLSHIM_PROBE_INVENTORY_H
#define NCCLSHIM_PROBE_INVENTORY_H

#include <stddef.h>

#include "elf_facts.h"
#include "ncclshim/ncclshim.h"

/* One file the search names, in search order. candidates.c is the one place that asks the
 * library for them. */
typedef struct probe_candidate {
  char *path;             /* real path */
  ncclshim_found_via how; /* the search step that reaches it */
  char reason[192];       /* why that step names it */
  int mapped;             /* already mapped in this process */
} probe_candidate;

/* The search's candidates, in its order; 0, or -1 with the reason printed to stderr. */
int probe_candidates(probe_candidate **out, size_t *count);
void probe_candidates_free(probe_candidate *list, size_t count);

/* An installed package record of an NCCL wheel (nvidia_nccl_cu12-2.27.3.dist-info). */
typedef struct py_wheel_record {
  char name[64];    /* "nvidia-nccl-cu12" */
  char version[32]; /* "2.27.3" */
} py_wheel_record;

/* A Python environment (a venv, conda, the user site, the system's packages). */
typedef struct py_env {
  char *prefix;       /* real path of the prefix (the user base for the user site) */
  const char *why;    /* how it was found: "VIRTUAL_ENV", "--python", "PATH", ... */
  char **wheel_files; /* real paths of its libnccl.so.2 files (nvidia/<x>/lib), in order */
  size_t wheel_count;
  char *conda_lib;          /* a conda environment's own lib/libnccl.so.2 (no wheel), or NULL */
  py_wheel_record *records; /* its nvidia-nccl-* package records */
  size_t record_count;
} py_env;

/* Every Python environment found: VIRTUAL_ENV, CONDA_PREFIX, each `pythons` prefix, the
 * prefix of each python3 on PATH, the user site (not when setuid) and the system's
 * dist-packages; each once (by real path) and only when it holds an NCCL wheel file or
 * record. 0, or -1 when out of memory. */
int pyenv_discover(char **pythons, int python_count, py_env **out, size_t *count);
void pyenv_free(py_env *envs, size_t count);

/* One NCCL file, whatever reaches it. */
typedef struct nccl_copy {
  char *path;             /* real path */
  int search_rank;        /* its place in the search order, -1 when the search does not reach it */
  ncclshim_found_via how; /* the search step, NCCLSHIM_VIA_NONE when none */
  char reason[192];       /* why that step names it */
  int mapped;
  int env; /* index of the Python environment whose wheel it is, -1 when none */
  elf_facts facts;
  int version;                /* packed; 0 unknown */
  const char *version_source; /* "banner", "file-name", "functions" (a lower bound), "unknown" */
  /* a banner its functions contradict: the release it claims (0: none, or a true one), and
   * the function that came later than that, or the one the claimed release has and the file
   * lacks (names of the list; one of the two is set) */
  int false_banner;
  const char *later_function;
  const char *lacked_function;
  int lacked_since;   /* the release that added lacked_function */
  int usable;         /* an NCCL 2.x with every REQUIRED function */
  char unusable[192]; /* why not, when usable is 0 */
} nccl_copy;

typedef struct inventory {
  nccl_copy *copies;
  size_t count;
  py_env *envs;
  size_t env_count;
  int host_glibc;              /* packed major*1000 + minor */
  int driver_cuda;             /* the CUDA driver's version (13000), 0 when no usable driver */
  int plain;                   /* copy a program loading "libnccl.so.2" by name gets, -1 none */
  const char *plain_source;    /* how `plain` is known: "loader" (traced), or why not */
  char plain_error[512];       /* the loader's failure on the first file it found, "" if none */
  char plain_error_file[4096]; /* the file it failed on, "" when unknown */
  int ncclshim;                /* copy ncclshim's search takes in this process, -1 none */
} inventory;

/* Gathers everything; `pythons` are extra environment prefixes (--python). 0, or -1 when out
 * of memory (printed). */
int inventory_gather(inventory *inv, char **pythons, int python_count);
void inventory_free(inventory *inv);

/* The copy a Python process of environment e loads: its wheel when it has one (frameworks load
 * their wheel's NCCL first), else a conda environment's lib/, else what a plain process
 * loads. -1 none. */
int inventory_env_winner(const inventory *inv, size_t e);
/* Index of the copy with this real path, -1 when none. */
int inventory_find(const inventory *inv, const char *path);

/* "2.28.9", "2.28.9+cuda13.0", ">= 2.28.3" or "unknown" into buf. */
const char *copy_version_text(const nccl_copy *c, char *buf, size_t size);

/* One line of how a copy is reached: "ld-cache: the ld.so cache registers it" or "python env
 * /opt/venv (VIRTUAL_ENV)". */
const char *copy_where(const inventory *inv, const nccl_copy *c, char *buf, size_t size);

#endif
