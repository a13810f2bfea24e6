/* The "unavailable" entries of the NCCL tables: one set for "no NCCL is loaded"
 * (ncclInvalidUsage) and one for "the loaded NCCL lacks this function"
 * (ncclInvalidArgument). Each leaves a message for ncclshim_last_error that names the
 * function and why. */
#include <stdio.h>

#include "src/internal.h"
#include "nccl_handle.h"
#include "nccl_stub_set.h"

/* No NCCL behind this table: say why, from the newest handle that failed to load. */
static void absent_note(enum ncclshim_nccl_function fn) {
  char why[1536];
  ncs_registry_absent(NCCLSHIM_BINDING_NCCL, "NCCL", why, sizeof(why));
  ncs_set_error("%s: %s", ncclshim_nccl_function_name(fn), why);
}
#define absent_result ncclInvalidUsage
#define absent_text ncclshim_last_error

typedef struct lacking_note {
  enum ncclshim_nccl_function fn;
  char text[1536];
  int used;
  const char *joiner;
} lacking_note;

/* Add a loaded library that lacks the function to the message. */
static int note_lacking(const ncs_handle *core, void *context) {
  lacking_note *note = context;
  const ncclshim_nccl *h = (const ncclshim_nccl *)core;
  if (core->status != NCCLSHIM_OK || h->present[note->fn]) return 0;
  if (note->used > 0 && (size_t)note->used < sizeof(note->text)) {
    char have[16];
    note->used +=
        snprintf(note->text + note->used, sizeof(note->text) - (size_t)note->used, "%s%s from %s%s",
                 note->joiner, ncclshim_format_version(h->version, have, sizeof(have)), core->path,
                 h->version >= ncclshim_nccl_function_version(note->fn)
                     ? " (its version should have it: a broken or customised build)"
                     : "");
  }
  note->joiner = "; and ";
  return 0;
}

/* The loaded NCCL lacks the function: name the version it needs and every loaded library
 * that lacks it (usually one). */
static void missing_note_fn(enum ncclshim_nccl_function fn) {
  char need[16];
  lacking_note note = {.fn = fn, .joiner = "; loaded "};
  note.used =
      snprintf(note.text, sizeof(note.text), "%s needs NCCL >= %s", ncclshim_nccl_function_name(fn),
               ncclshim_format_version(ncclshim_nccl_function_version(fn), need, sizeof(need)));
  ncs_registry_visit(NCCLSHIM_BINDING_NCCL, note_lacking, &note);
  ncs_set_error("%s", note.text);
}
#define missing_note missing_note_fn
#define missing_result ncclInvalidArgument
#define missing_text ncclshim_last_error

#define ABSENT_(...) NCCLSHIM_NCCL_STUB(absent, __VA_ARGS__)
#define MISSING_(...) NCCLSHIM_NCCL_STUB(missing, __VA_ARGS__)
NCCLSHIM_NCCL_FUNCTIONS(ABSENT_)
NCCLSHIM_NCCL_FUNCTIONS(MISSING_)

/* With no library, the error string still comes from ncclshim's own table. */
static const char *absent_error_string(ncclResult_t result) {
  return ncclshim_nccl_result_string(result);
}

#define ABSENT_ENTRY_(...) NCCLSHIM_NCCL_STUB_ENTRY(absent, __VA_ARGS__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init" /* the one entry replaced below */
const ncclshim_nccl_table ncs_absent_table = {
    NCCLSHIM_NCCL_FUNCTIONS(ABSENT_ENTRY_).ncclGetErrorString = absent_error_string,
};
#pragma GCC diagnostic pop

#define FILL_MISSING_(name, version, policy, role, returns, n, params) \
  if (!nccl->present[NCCLSHIM_FN_##name]) nccl->table.name = missing_##name;
void ncs_fill_missing(ncclshim_nccl *nccl) { NCCLSHIM_NCCL_FUNCTIONS(FILL_MISSING_) }
