/* What glibc's dynamic loader itself maps for a library name, under this process's
 * environment: a stub ELF that needs only that name (DT_NEEDED), traced by the loader with
 * LD_TRACE_LOADED_OBJECTS=1 as ldd does. Tracing maps the library and its dependencies and
 * runs no constructor and no code of theirs; the stub is made here in memory, so nothing of
 * the traced library is needed at build time. The loader runs in a child process under a
 * time limit: a file it blocks or crashes on (a FIFO, a truncated library) is a finding, not
 * a hang of the caller. */
#ifndef NCCLSHIM_LOADER_TRACE_H
#define NCCLSHIM_LOADER_TRACE_H

#include <stddef.h>

typedef enum ncshl_trace_outcome {
  NCSHL_TRACE_MAPS,       /* the loader maps `path` */
  NCSHL_TRACE_PRELOADED,  /* an object preloaded (LD_PRELOAD) stands for it: one of `preloaded` */
  NCSHL_TRACE_NOT_FOUND,  /* the loader finds no file of that name */
  NCSHL_TRACE_FAILS,      /* it found one and failed on it: `path` (when known), `message` */
  NCSHL_TRACE_UNAVAILABLE /* the loader could not be asked (`message` says why) */
} ncshl_trace_outcome;

typedef struct ncshl_trace_result {
  ncshl_trace_outcome outcome;
  char path[4096];      /* the file mapped, or the one the loader failed on ("" if unknown) */
  char message[512];    /* the loader's own error text, or why it could not be asked */
  char preloaded[4096]; /* the objects mapped before the program's own needs, one per line */
} ncshl_trace_result;

/* Trace `soname` (a name without '/'). `inhibit_cache` runs the loader with --inhibit-cache
 * (for a caller told to ignore /etc/ld.so.cache). Waits at most `limit_ms`. */
void ncshl_trace(const char *soname, int inhibit_cache, int limit_ms, ncshl_trace_result *r);

#endif
