/* Checked NCCL calls: an ncclResult_t becomes a status and a message naming the call, NCCL's
 * text for the code and NCCL's last error. */
#include <stdio.h>
#include <string.h>

#include "comm_internal.h"

ncclshim_nccl *ncs_comm_resolve(ncclshim_nccl *nccl) {
  return nccl != NULL ? nccl : ncclshim_nccl_default();
}

ncclshim_status ncs_comm_usable(ncclshim_nccl *nccl, const char *who) {
  ncclshim_status status = ncclshim_nccl_status(nccl);
  if (status == NCCLSHIM_OK) return NCCLSHIM_OK;
  return ncs_fail(status, "%s: no NCCL is loaded (%s)", who,
                  nccl ? ncclshim_nccl_message(nccl) : "out of memory");
}

/* NCCL's last error, copied, when the library has ncclGetLastError and it says something. */
static void last_error(ncclshim_nccl *nccl, char *buf, size_t size) {
  buf[0] = '\0';
  if (ncclshim_nccl_status(nccl) != NCCLSHIM_OK ||
      !ncclshim_nccl_has_function(nccl, NCCLSHIM_FN_ncclGetLastError))
    return;
  const char *text = ncclshim_nccl_functions(nccl)->ncclGetLastError(NULL);
  if (text != NULL) snprintf(buf, size, "%s", text);
}

/* ncclGetErrorString of a known code, copied (the absent table answers from ncclshim's). */
static void error_string(ncclshim_nccl *nccl, ncclResult_t result, char *buf, size_t size) {
  const char *text = ncclshim_nccl_functions(nccl)->ncclGetErrorString(result);
  snprintf(buf, size, "%s", text != NULL ? text : "(no text)");
}

ncclshim_status ncclshim_nccl_check(ncclshim_nccl *nccl, ncclResult_t result, const char *call) {
  int code = (int)result;
  if (code == ncclSuccess || code == ncclInProgress) return NCCLSHIM_OK;
  nccl = ncs_comm_resolve(nccl);
  if (call == NULL) call = "NCCL call";
  char what[512], last[1024];
  if (ncclshim_nccl_result_known(code)) {
    char text[256];
    error_string(nccl, result, text, sizeof(text));
    snprintf(what, sizeof(what), "%s (%d): %s", ncclshim_nccl_result_name(code), code, text);
  } else {
    snprintf(what, sizeof(what), "unknown result code %d", code);
  }
  last_error(nccl, last, sizeof(last));
  char hint[448]; /* comm_devapi.c: which versions meet in a device-API call */
  ncs_devapi_hint(nccl, result, call, hint, sizeof(hint));
  if (last[0] != '\0')
    return ncs_fail_code(NCCLSHIM_NCCL_ERROR, code, "%s failed: %s; NCCL's last error: %s%s", call,
                         what, last, hint);
  return ncs_fail_code(NCCLSHIM_NCCL_ERROR, code, "%s failed: %s%s", call, what, hint);
}
