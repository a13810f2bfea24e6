/* Helpers shared by ncclshim's sources; nothing here is exported. */
#ifndef NCCLSHIM_INTERNAL_H
#define NCCLSHIM_INTERNAL_H

#include <stddef.h>

#include "ncclshim/status.h"

/* Set the calling thread's message (what ncclshim_last_error returns) and return `status`. */
ncclshim_status ncs_fail(ncclshim_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* ncs_fail with `nccl_result` as the thread's ncclshim_last_nccl_result: what
 * ncclshim_nccl_check says of a failing call, and what a caller that wraps that message in
 * more context passes on (the code read before). Every other message sets the code to 0. */
ncclshim_status ncs_fail_code(ncclshim_status status, int nccl_result, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
/* Set the thread's message without a status. */
void ncs_set_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* 1 when NCCLSHIM_DEBUG asks for the search trail on stderr. */
int ncs_debug_enabled(void);
/* The one reading of an on/off variable: 1 for a value that is set to anything but "" or
 * "0" (NULL: unset); ncs_env_flag reads the variable `name` (secure_getenv). */
int ncs_flag_on(const char *value);
int ncs_env_flag(const char *name);

#endif
