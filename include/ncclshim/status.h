/* ncclshim's status codes and search-trail records, shared by the NCCL and CUDA bindings, and
 * the declarations of the functions both bindings offer. */
#ifndef NCCLSHIM_STATUS_H
#define NCCLSHIM_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NCCLSHIM_BUILDING)
#define NCCLSHIM_API __attribute__((visibility("default")))
#else
#define NCCLSHIM_API
#endif

/* The status codes, one row each: X(NAME, value, "short sentence"), in value order. Stable
 * values: a code never changes meaning; new codes are only appended. The enum below, the
 * names and sentences of ncclshim_status_name/_string, the Rust crate's Status and the table
 * of docs/reference.md ("Status codes", checked by the test status-docs) all come from it. */
#define NCCLSHIM_STATUSES(X)                                                       \
  X(OK, 0, "success")                                                              \
  X(NOT_FOUND, 1, "no library file was found")                                     \
  X(LOAD_FAILED, 2, "a library file was found but could not be loaded")            \
  X(NOT_NCCL, 3, "the file loaded is not the library asked for")                   \
  X(MISSING_SYMBOLS, 4, "the library lacks required functions")                    \
  X(VERSION_TOO_OLD, 5, "the library is older than the version asked for")         \
  X(WRONG_MAJOR, 6, "the library has a major version ncclshim does not support")   \
  X(BAD_VERSION, 7, "the library's version query failed or gave no valid version") \
  X(INVALID_ARGUMENT, 8, "an argument is invalid")                                 \
  X(OUT_OF_MEMORY, 9, "out of memory")                                             \
  X(UNAVAILABLE, 10, "the loaded library does not provide this")                   \
  X(DRIVER_UNAVAILABLE, 11, "no usable CUDA driver")                               \
  X(NO_DEVICE, 12, "no CUDA device")                                               \
  X(CUDA_ERROR, 13, "a CUDA driver call failed")                                   \
  X(NCCL_ERROR, 14, "an NCCL call failed")                                         \
  X(TIMEOUT, 15, "the wait ran past its deadline")                                 \
  X(FORKED, 16, "state from before fork() was used in the child process")          \
  X(SECOND_COPY, 17, "another NCCL is already mapped in this process")

#define NCCLSHIM_STATUS_ENUM_(name, value, text) NCCLSHIM_##name = value,
typedef enum ncclshim_status { NCCLSHIM_STATUSES(NCCLSHIM_STATUS_ENUM_) } ncclshim_status;
#undef NCCLSHIM_STATUS_ENUM_

/* "NOT_FOUND", ... ; "UNKNOWN" for a value outside the enum. Static string; thread-safe. */
NCCLSHIM_API const char *ncclshim_status_name(ncclshim_status status);
/* A short sentence: "no library file was found"; "unknown status code" for a value outside
 * the enum. Static string; thread-safe. The meaning of each code: docs/reference.md. */
NCCLSHIM_API const char *ncclshim_status_string(ncclshim_status status);

/* How a candidate library was found. */
typedef enum ncclshim_found_via {
  NCCLSHIM_VIA_NONE = 0,
  NCCLSHIM_VIA_EXPLICIT = 1,     /* a path given through the API */
  NCCLSHIM_VIA_ENVIRONMENT = 2,  /* a path given through NCCLSHIM_*_LIBRARY */
  NCCLSHIM_VIA_PRELOADED = 3,    /* already mapped in this process */
  NCCLSHIM_VIA_SYSTEM = 4,       /* the dynamic loader's search for the SONAME */
  NCCLSHIM_VIA_WELL_KNOWN = 5,   /* one of the documented install locations */
  NCCLSHIM_VIA_LIBRARY_PATH = 6, /* a directory of LD_LIBRARY_PATH */
  NCCLSHIM_VIA_ACTIVE_ENV = 7,   /* the active Python or conda environment */
  NCCLSHIM_VIA_LD_CACHE = 8      /* a file the ld.so cache registers under the SONAME */
} ncclshim_found_via;

/* "none", "explicit", "environment", "already-loaded", "system-search", "well-known-place",
 * "library-path", "active-environment", "ld-cache"; "unknown" for a value outside the enum.
 * Static string; thread-safe. */
NCCLSHIM_API const char *ncclshim_found_via_name(ncclshim_found_via via);

/* One candidate tried during a search, in order. Strings live as long as their handle. */
typedef struct ncclshim_attempt {
  const char *candidate;  /* the file name or path tried */
  ncclshim_found_via how; /* which step tried it */
  ncclshim_status result; /* NCCLSHIM_OK for the one chosen */
  const char *reason;     /* why it was refused, dlerror() text included; "" when chosen */
} ncclshim_attempt;

/* Facts about a row of a binding's function list, declared beside the list's table
 * (ncclshim.h, cuda.h) for its prefix: the row's
 * name (prefix_function_name), its version (prefix_function_version; what the version means
 * is the list's) and 1 when it is REQUIRED (prefix_function_required). Out-of-range values
 * give "(unknown function)", 0 and 0. */
/* The functions both handles offer (ncclshim_nccl in ncclshim.h, ncclshim_cuda in cuda.h),
 * each written out there for its prefix (ncclshim_nccl's trail, the last two, in diag.h);
 * each header says what its open searches and returns:
 *   prefix_open(options, out)  search, open and bind; options NULL for the defaults
 *   prefix_close(h)            free the handle's bookkeeping (the library stays mapped)
 *   prefix_default()           the process-wide handle, opened on first use; never NULL
 *   prefix_functions(h)        the table; never NULL, and no entry is NULL
 * and the accessors, each of which accepts NULL (the out parameter of an open that ran out
 * of memory) and answers as for "out of memory":
 *   prefix_status(h)           the outcome of the handle's open (prefix_open's return);
 *                              OUT_OF_MEMORY for NULL
 *   prefix_message(h)          one line: what was loaded, or why nothing was (every place
 *                              searched); never NULL
 *   prefix_path(h)             the absolute path of the file mapped, NULL when none
 *   prefix_found_via(h)        the search step that found it; NCCLSHIM_VIA_NONE when none
 *   prefix_preloaded(h)        1 when it was already mapped in the process before ncclshim
 *                              looked
 *   prefix_attempt_count(h), prefix_attempt(h, index)
 *                              the search trail, in the order tried: how many candidates
 *                              were tried, and the index-th (NULL when index >= the count);
 *                              each record lives as long as the handle */

/* The calling thread's most recent failure message from ncclshim ("" when none); never
 * NULL. Each thread has its own (thread-safe): the pointer stays valid until the thread
 * exits, and the text is overwritten by the thread's next failure. Success leaves it. */
NCCLSHIM_API const char *ncclshim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_STATUS_H */
