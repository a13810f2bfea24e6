#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/outcome.h"
#include "internal.h"
#include "ncclshim/ncclshim.h"

/* Indexed by value; as many entries as rows, so that the values have no gap (and a value
 * given twice fails to build: -Woverride-init). */
#define STATUS_NAME_(id, value, text) [value] = #id,
#define STATUS_TEXT_(id, value, text) [value] = text,
#define STATUS_ROW_(id, value, text) +1
static const char *const status_names[] = {NCCLSHIM_STATUSES(STATUS_NAME_)};
static const char *const status_texts[] = {NCCLSHIM_STATUSES(STATUS_TEXT_)};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) == 0 NCCLSHIM_STATUSES(STATUS_ROW_),
               "NCCLSHIM_STATUSES: the values must be 0, 1, 2, ... without a gap");
#define STATUS_COUNT (sizeof(status_names) / sizeof(status_names[0]))

const char *ncclshim_status_name(ncclshim_status status) {
  return (unsigned)status < STATUS_COUNT ? status_names[status] : "UNKNOWN";
}

const char *ncclshim_status_string(ncclshim_status status) {
  return (unsigned)status < STATUS_COUNT ? status_texts[status] : "unknown status code";
}

/* The public steps are the loader's, by the same IDs and numbers. */
#define SAME_STEP_(id, value, override, name, place)          \
  _Static_assert(NCCLSHIM_VIA_##id == value,                  \
                 "ncclshim_found_via and the loader's steps " \
                 "disagree");
NCSHL_STEPS(SAME_STEP_)

const char *ncclshim_found_via_name(ncclshim_found_via via) {
  const char *name = ncshl_step_name((ncshl_step)via);
  return via == NCCLSHIM_VIA_NONE ? "none" : name ? name : "unknown";
}

/* The per-thread message, and the NCCL result code behind it when ncclshim_nccl_check wrote
 * it, live behind one pthread key rather than in _Thread_local storage: TLS in a dlopen'ed
 * library would add ld.so to the libraries this one needs. */
enum { MESSAGE_SIZE = 2048 };
typedef struct thread_error {
  int nccl_result; /* 0: the message is not an NCCL failure */
  char message[MESSAGE_SIZE];
} thread_error;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t error_key;
static int key_ok;

static void make_key(void) { key_ok = pthread_key_create(&error_key, free) == 0; }

/* Unloaded (dlclose): give the key back, or a process that loads and unloads the library
 * 1024 times (PTHREAD_KEYS_MAX) has none left and every message is lost. The unloading
 * thread's message is freed; other live threads' stay allocated (no way to reach them). */
__attribute__((destructor)) static void delete_key(void) {
  if (!key_ok) return;
  key_ok = 0;
  free(pthread_getspecific(error_key));
  pthread_setspecific(error_key, NULL);
  pthread_key_delete(error_key);
}

static thread_error *current(int create) {
  pthread_once(&key_once, make_key);
  if (!key_ok) return NULL;
  thread_error *e = pthread_getspecific(error_key);
  if (e == NULL && create && (e = calloc(1, sizeof(*e))) != NULL &&
      pthread_setspecific(error_key, e) != 0) {
    free(e);
    e = NULL;
  }
  return e;
}

const char *ncclshim_last_error(void) {
  const thread_error *e = current(0);
  return e ? e->message : "";
}

int ncclshim_last_nccl_result(void) {
  const thread_error *e = current(0);
  return e ? e->nccl_result : 0;
}

static void vset(int nccl_result, const char *format, va_list args) {
  thread_error *e = current(1);
  if (e == NULL) return;
  e->nccl_result = nccl_result;
  vsnprintf(e->message, MESSAGE_SIZE, format, args);
}

void ncs_set_error(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vset(0, format, args);
  va_end(args);
}

ncclshim_status ncs_fail(ncclshim_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vset(0, format, args);
  va_end(args);
  return status;
}

ncclshim_status ncs_fail_code(ncclshim_status status, int nccl_result, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vset(nccl_result, format, args);
  va_end(args);
  return status;
}

int ncs_flag_on(const char *value) {
  return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

int ncs_env_flag(const char *name) { return ncs_flag_on(secure_getenv(name)); }

int ncs_debug_enabled(void) { return ncs_env_flag("NCCLSHIM_DEBUG"); }
