/* The flight recorder of the drop-in (off unless NCCLSHIM_RECORD=N): the last N NCCL calls of
 * the process in a lock-free ring, with a sequence number per communicator, dumped as JSON
 * lines on an error, an asynchronous error, a chosen signal or at exit (docs/dropin.md).
 *
 * Each recording wrapper (record_calls.c) fills an ncs_rec_call from its arguments, then
 * brackets the real call with ncs_rec_begin and ncs_rec_end. */
#ifndef NCCLSHIM_DROPIN_RECORD_H
#define NCCLSHIM_DROPIN_RECORD_H

#include <stdint.h>

#include "ncclshim/ncclshim.h"

/* "No value" for the int fields of a call (root, peer, rank, ...). */
#define NCCLSHIM_REC_NONE INT32_MIN
/* The result of a call that returns no ncclResult_t, and of one that has not returned. */
#define NCCLSHIM_REC_NO_RESULT (INT32_MIN + 1)
#define NCCLSHIM_REC_PENDING (INT32_MIN + 2)

typedef struct ncs_rec_comm ncs_rec_comm;

/* One call, as its wrapper sees it. Unset fields keep NCCLSHIM_REC_NONE / NULL. */
typedef struct ncs_rec_call {
  int fn;                  /* enum ncclshim_nccl_function */
  int is_op;               /* takes a stream: an operation, numbered per communicator */
  int is_query;            /* a pure query (version, rank, async error): recorded only on error */
  const void *comm;        /* the communicator it acts on */
  ncclComm_t *comm_out;    /* where it writes a new communicator (init, split, ...) */
  const void *uid;         /* the ncclUniqueId a new communicator is made from */
  ncclResult_t *async_out; /* ncclCommGetAsyncError's answer */
  uint64_t count;
  int has_count;
  int datatype, op, root, peer, rank, nranks, color;
  const void *stream;
  const ncclshim_coll_config_t *coll_config; /* a ...Config collective's config, or NULL */
  int simulated; /* ncclGroupSimulateEnd given a simInfo: the group ends, launching nothing */
  /* Filled by ncs_rec_begin: */
  int skip;       /* NCCL calling its own name, inside a recorded call: not recorded */
  int captured;   /* an operation on a stream capturing into a CUDA graph */
  uint64_t index; /* its place in the ring, plus one (0: not in the ring) */
  uint64_t seq;   /* its sequence number on its communicator (0: not an operation) */
} ncs_rec_call;

/* The table of recording wrappers, each calling `real`'s entry (record_calls.c). */
const ncclshim_nccl_table *ncs_rec_table(const ncclshim_nccl_table *real);
/* The fork handler: in a forked child, a process of its own (identity, lock, hang thread). */
void ncs_rec_in_child(void);
/* Audit mode: run once at the first recorded call, when the program's libc is running
 * (audit.c registers the fork handler with it then); NULL otherwise. */
extern void (*_Atomic ncs_rec_on_first_call)(void);
/* Audit mode (audit.c): the wrappers over `real`, whose entries are filled as the program
 * binds them; NULL when the recorder is off. */
const ncclshim_nccl_table *ncs_rec_audit_table(const ncclshim_nccl_table *real);

/* The recorder starts when the library loads (record_start.c): NCCLSHIM_RECORD* read, the
 * ring allocated, the dump directory opened, the signal handlers installed. At the first NCCL
 * call: 1 when recording, with NCCL's version for the dumps; 0 when off. With no NCCL, the
 * recorder is turned off (signal actions restored) and says so on stderr. */
int ncs_rec_attach(int nccl_version);
void ncs_rec_no_nccl(void);
/* Audit mode, a drop-in in the program's namespace: this recorder turns off quietly (signal
 * actions given back) and leaves the recording to that one. */
void ncs_rec_hand_over(void);
/* "the last N calls; dumps to PATTERN on ..." for the debug line. */
void ncs_rec_describe(char *text, size_t size);

void ncs_rec_begin(ncs_rec_call *call);
void ncs_rec_end(ncs_rec_call *call, int result);

/* Write the dump now (async-signal-safe). `why` names the trigger; `fn` (or -1) and `value`
 * detail it: the failing function and its result, the signal number. */
void ncs_rec_dump(const char *why, int fn, int value);
/* The hang dump (record_hang_thread.c): an event that covers `calls` operations, the first
 * at ring index `index` (plus one), has not completed after `hang_ms`; `note` ends the
 * "wrote ..." line. Not from a signal handler. */
void ncs_rec_dump_hang(int fn, int hang_ms, uint64_t index, uint64_t calls, const char *note);

#endif
