/* ncclshim diagnostics: what a program that only calls NCCL through the table does not need,
 * and the probe, the doctor, the bindings and a careful launcher do. How the handle's NCCL was
 * found (the trail), what its file says (the banner's build tag, the fingerprint ranks compare),
 * why a capability or function is missing, and every NCCL in the process and on the machine.
 * Include it beside ncclshim/ncclshim.h; the same conventions hold (ncclshim.h's head). */
#ifndef NCCLSHIM_DIAG_H
#define NCCLSHIM_DIAG_H

#include <stddef.h>

#include "ncclshim/ncclshim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- How the handle's NCCL was found ------------------------------------------------ */

/* The search trail, in the order tried (status.h, "The functions both handles offer"): how
 * many candidates were tried, and the index-th (NULL when index >= the count); each record
 * lives as long as the handle. Both accept NULL. */
NCCLSHIM_API size_t ncclshim_nccl_attempt_count(const ncclshim_nccl *handle);
NCCLSHIM_API const ncclshim_attempt *ncclshim_nccl_attempt(const ncclshim_nccl *handle,
                                                           size_t index);

/* ---- What the loaded file says ----------------------------------------------------- */

/* The build tag from the library's banner ("+cuda13.0"), "" when it carries none or no
 * library is loaded. It reads the file, so the first call per handle costs a scan; later
 * calls are free. Thread-safe (the scan runs once under the handle's lock). */
NCCLSHIM_API const char *ncclshim_nccl_build(ncclshim_nccl *nccl);
/* 1 when an optional function is missing although its version says it should be there
 * (a broken or customised build); 0 otherwise, also without NCCL. */
NCCLSHIM_API int ncclshim_nccl_unexpectedly_missing(const ncclshim_nccl *nccl,
                                                    enum ncclshim_nccl_function fn);
/* Why a capability is missing ("needs NCCL >= 2.28.0; loaded 2.27.3", "no NCCL is loaded",
 * "the library lacks ncclX", "unknown capability N"), "" when it is present, written into
 * buf of `size` bytes (cut to fit, always terminated; nothing written when size is 0).
 * Returns buf. */
NCCLSHIM_API const char *ncclshim_nccl_capability_reason(const ncclshim_nccl *nccl,
                                                         ncclshim_capability cap, char *buf,
                                                         size_t size);

/* A short string for ranks to compare before creating a communicator (equal strings: same
 * NCCL version, same library build, same capabilities, same NCCL_* settings other than
 * NCCL_DEBUG*). "nccl2.28.9-b<build-id>-s<file size>-c<capability bits>-e<environment hash>"
 * when the library carries a GNU build-id note (read from the mapped image: no file is
 * read); "nccl2.28.9-f<content hash>-c<capability bits>-e<environment hash>" for one without
 * (the whole file is hashed once per handle: tens of milliseconds for a 200 MB library);
 * "none-e<environment hash>" without NCCL. The environment is hashed at every call. Written
 * into buf of `size` bytes (64 is enough; cut to fit, always terminated; nothing written
 * when size is 0). Returns buf. Thread-safe (lazy work runs once under the handle's lock),
 * but the environment must not change meanwhile (setenv is not thread-safe anyway). */
NCCLSHIM_API const char *ncclshim_nccl_fingerprint(ncclshim_nccl *nccl, char *buf, size_t size);
/* The same with the content hash whatever the library carries: a check of the bytes
 * ("nccl2.28.9-f<content hash>-c...-e..."), which reads the whole file once per handle. */
NCCLSHIM_API const char *ncclshim_nccl_fingerprint_content(ncclshim_nccl *nccl, char *buf,
                                                           size_t size);

/* ---- Every NCCL in the process, and every NCCL on the machine ---------------------- */

/* One NCCL library: mapped in the process (the census) or visible to the search (the list).
 * Owned by ncclshim, reached through the pointers below; new fields are only appended. */
typedef struct ncclshim_nccl_entry {
  const char *path;       /* absolute; for NCCL linked into the program, the program's file */
  int version;            /* packed; 0 when unknown */
  ncclshim_found_via how; /* census: NCCLSHIM_VIA_PRELOADED; list: the first search step
                             that reaches the file (for the chosen one, the step that found it,
                             as ncclshim_nccl_found_via says) */
  int mapped;             /* 1 when mapped in this process */
  int in_program;         /* 1 when linked into the executable itself (statically) */
  int chosen;             /* 1 for the library the handle uses */
} ncclshim_nccl_entry;

/* The census taken when the handle was opened: every object mapped in the process that
 * defines the function ncclGetVersion (whatever its file name, the executable included;
 * ncclshim's drop-in left out), the chosen one marked. More than one is a hazard: each NCCL
 * has its own communicators, threads and NCCL_* settings, and a communicator of one is
 * garbage to the other; the handle's message then carries a warning naming them. The count,
 * and the index-th entry (NULL when index >= the count); entries live as long as the handle. */
NCCLSHIM_API size_t ncclshim_nccl_census_count(const ncclshim_nccl *nccl);
NCCLSHIM_API const ncclshim_nccl_entry *ncclshim_nccl_census_entry(const ncclshim_nccl *nccl,
                                                                   size_t index);

/* The three functions of each list ncclshim hands out (ncclshim_nccl_list here,
 * ncclshim_plugin_list in nccl_plugins.h), for each list's prefix:
 *   prefix_count(list)         how many entries; 0 for NULL
 *   prefix_entry(list, index)  the index-th entry (NULL when index >= the count); entries
 *                              live as long as the list
 *   prefix_free(list)          frees the list and its entries; NULL is ignored */

/* Every NCCL the search can see now, without loading any: the census, then each file of
 * the search's steps (LD_LIBRARY_PATH, the active environment, the ld.so cache, the
 * well-known places) that passes the ELF check, each file once (by real path), with the
 * version its banner states (read from the file's .rodata section, a few hundred KB).
 * `chosen` (or NULL) marks its library. OK, INVALID_ARGUMENT (out NULL) or OUT_OF_MEMORY.
 * Free with ncclshim_nccl_list_free. */
typedef struct ncclshim_nccl_list ncclshim_nccl_list;
NCCLSHIM_API ncclshim_status ncclshim_nccl_list_visible(const ncclshim_nccl *chosen,
                                                        ncclshim_nccl_list **out);
NCCLSHIM_API size_t ncclshim_nccl_list_count(const ncclshim_nccl_list *list);
NCCLSHIM_API const ncclshim_nccl_entry *ncclshim_nccl_list_entry(const ncclshim_nccl_list *list,
                                                                 size_t index);
NCCLSHIM_API void ncclshim_nccl_list_free(ncclshim_nccl_list *list);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_DIAG_H */
