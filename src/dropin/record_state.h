/* The recorder's shared state: the ring of calls and the communicators, written by
 * record_ring.c and read by record_dump.c (also from a signal handler: only atomics and
 * plain reads of entries checked by their tag). */
#ifndef NCCLSHIM_DROPIN_RECORD_STATE_H
#define NCCLSHIM_DROPIN_RECORD_STATE_H

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>

/* One recorded call. A writer sets tag to 0, writes the fields, then sets tag to the call's
 * index + 1 (a seqlock): a reader that sees the same non-zero tag before and after copying an
 * entry has a consistent copy. Only `result` changes afterwards (pending -> the result). */
typedef struct rec_entry {
  _Atomic uint64_t tag;
  _Atomic int32_t result;
  int32_t fn, rank, datatype, op, root, peer, thread;
  uint64_t seq; /* 0: not an operation */
  uint64_t count;
  int32_t has_count;
  uint64_t comm_id;
  uintptr_t comm, stream;
  uint64_t start_ns; /* wall clock at the kernel tick's resolution (CLOCK_REALTIME_COARSE) */
} rec_entry;

/* A communicator seen by the recorder. */
struct ncclshim_rec_comm {
  _Atomic uintptr_t key;     /* the ncclComm_t; 0 = free slot */
  _Atomic uint64_t ops;      /* the sequence number of its last operation */
  _Atomic uint64_t id;       /* the same on every rank: from the unique id, or the parent */
  _Atomic uint64_t children; /* communicators split or shrunk from it */
  _Atomic int rank, nranks, created_by, async_error;
};

enum { REC_COMMS = 4096 }; /* a power of two */

typedef struct rec_state {
  rec_entry *entries;
  uint64_t mask;     /* slots - 1; slots is the power of two >= capacity */
  uint64_t capacity; /* N of NCCLSHIM_RECORD=N: the last N calls are dumped */
  _Atomic uint64_t next;
  struct ncclshim_rec_comm comms[REC_COMMS];
  _Atomic int process_rank; /* rank in the first communicator made from a unique id */
  int nccl_version;
  int signal; /* NCCLSHIM_RECORD_SIGNAL, 0 if none */
  int at_exit;
  char dir[PATH_MAX];
  char host[72];
} rec_state;

extern rec_state *ncclshim_rec; /* NULL while the recorder is off */

#endif
