/* ncclshim's status codes and search-trail records, shared by the NCCL and CUDA bindings. */
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

/* Stable values: a code never changes meaning; new codes are only appended. */
typedef enum ncclshim_status {
  NCCLSHIM_OK = 0,
  NCCLSHIM_NOT_FOUND = 1,        /* no candidate file exists */
  NCCLSHIM_LOAD_FAILED = 2,      /* a file exists but dlopen or the ELF check refused it */
  NCCLSHIM_NOT_NCCL = 3,         /* it loaded, but it is not the library asked for */
  NCCLSHIM_MISSING_SYMBOLS = 4,  /* required functions are missing */
  NCCLSHIM_VERSION_TOO_OLD = 5,  /* older than the minimum asked for */
  NCCLSHIM_WRONG_MAJOR = 6,      /* a major version ncclshim does not speak */
  NCCLSHIM_BAD_VERSION = 7,      /* the version query failed or answered nonsense */
  NCCLSHIM_INVALID_ARGUMENT = 8, /* the caller passed something unusable */
  NCCLSHIM_OUT_OF_MEMORY = 9,
  NCCLSHIM_UNAVAILABLE = 10,        /* the loaded library lacks this function or feature */
  NCCLSHIM_DRIVER_UNAVAILABLE = 11, /* no usable CUDA driver (absent, stub) */
  NCCLSHIM_NO_DEVICE = 12,          /* a driver, but no CUDA device */
  NCCLSHIM_CUDA_ERROR = 13,         /* a CUDA driver call failed */
  NCCLSHIM_NCCL_ERROR = 14,         /* an NCCL call failed */
  NCCLSHIM_TIMEOUT = 15,            /* a bounded wait ran out */
  NCCLSHIM_FORKED = 16,             /* state initialised in a parent process used after fork */
  NCCLSHIM_SECOND_COPY = 17 /* another NCCL is mapped in the process, and the caller asked to
                               refuse mapping a second one */
} ncclshim_status;

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

/* The calling thread's most recent failure message from ncclshim ("" when none); never
 * NULL. Each thread has its own (thread-safe): the pointer stays valid until the thread
 * exits, and the text is overwritten by the thread's next failure. Success leaves it. */
NCCLSHIM_API const char *ncclshim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSHIM_STATUS_H */
