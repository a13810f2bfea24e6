/* Helpers shared by ncclshim's sources; nothing here is exported. */
#ifndef NCCLSHIM_INTERNAL_H
#define NCCLSHIM_INTERNAL_H

#include <stddef.h>

#include "ncclshim/status.h"

/* Set the calling thread's message (what ncclshim_last_error returns) and return `status`. */
ncclshim_status ncclshim_fail(ncclshim_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Set the thread's message without a status. */
void ncclshim_set_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* 1 for a result code some NCCL release has used (its name and text are known). */
int ncclshim_nccl_result_known(int result);

/* 1 when NCCLSHIM_DEBUG asks for the search trail on stderr. */
int ncclshim_debug_enabled(void);
/* 1 when the variable is set (secure_getenv) to anything but "" or "0". */
int ncclshim_env_flag(const char *name);

#endif
