/* The recorder's shared state: the ring of calls and the communicators, written by
 * record_ring.c and record_comms.c, read by record_dump.c (also from a signal handler: only
 * atomics and plain reads of entries checked by their tag). */
#ifndef NCCLSHIM_DROPIN_RECORD_STATE_H
#define NCCLSHIM_DROPIN_RECORD_STATE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "dropin.h"

/* One recorded call. A writer sets tag to 0, writes the fields, then sets tag to the call's
 * index + 1 (a seqlock): a reader that sees the same non-zero tag before and after copying an
 * entry has a consistent copy. Only `result` changes afterwards (pending -> the result). */
typedef struct rec_entry {
  _Atomic uint64_t tag;
  _Atomic int32_t result;
  int32_t fn, rank, datatype, op, root, peer, thread, captured;
  uint64_t seq;  /* 0: not an operation */
  uint64_t coll; /* its number among the communicator's collectives; 0: not a collective */
  uint64_t count;
  int32_t has_count;
  uint64_t comm_id;
  uintptr_t comm, stream; /* raw in memory; a dump writes keyed hashes, never addresses */
  uint64_t start_ns;      /* wall clock at the kernel tick's resolution (CLOCK_REALTIME_COARSE) */
  /* A ...Config collective's config, once NCCL accepted it: its userProfilerTag and the start
   * of its algSelection (cut to fit, "" when it has none); has_config 0 otherwise. */
  int32_t has_config;
  uint64_t profiler_tag;
  char alg[16];
} rec_entry;

/* A communicator seen by the recorder. Records are never freed, only recycled (a reader that
 * raced a destroy reads a valid record): a destroyed or aborted one leaves the lookup table
 * at once but stays listed in dumps until REC_ENDED_KEPT later ones have ended. */
struct ncs_rec_comm {
  _Atomic uintptr_t key;   /* the ncclComm_t while in the lookup table; 0 otherwise */
  _Atomic uint64_t ops;    /* the sequence number of its last operation */
  _Atomic uint64_t colls;  /* how many of them were collectives (not ncclSend/ncclRecv) */
  _Atomic uint64_t id;     /* the same on every rank: from the unique id, or the parent; 0 free */
  _Atomic uint64_t splits; /* split/shrink calls made on it, NCCL_SPLIT_NOCOLOR ones too */
  _Atomic uintptr_t shown; /* the ncclComm_t it was (kept after it ends, for the dump) */
  _Atomic int rank, nranks, created_by, ended_by, async_error;
  _Atomic uint32_t dumped;     /* bit c: an error dump with result c was written for it */
  _Atomic unsigned generation; /* the process generation that made it (a fork starts one) */
  struct ncs_rec_comm *next_ended;
  struct ncs_rec_comm *all_next; /* every record ever made, for the dump */
};

enum { REC_ENDED_KEPT = 64 };

/* A hang dump's evidence, kept for every later dump of the process: the program's watchdog
 * (ncclCommAbort, abort()) or the launcher's SIGTERM dumps again after it, and that dump
 * must still name the stuck call. stuck 0: no hang seen. Written and read under `busy`. */
typedef struct rec_hang_seen {
  uint64_t stuck, stuck_calls; /* as the hang dump's trigger (record_dump.c) */
  uint64_t seq, comm_id;       /* the stuck call's, 0 when it was no longer in the ring */
  int fn, hang_ms, rank;
} rec_hang_seen;

/* Open addressing on the ncclComm_t, linear probing, deletion by backward shift (no
 * tombstones). Lookups take no lock: one that misses during a concurrent change retries under
 * the lock. Grown (doubled) by the writer when half full; an old table is kept, never freed,
 * since a reader may still be in it (the sizes sum to less than twice the last). */
typedef struct rec_table {
  size_t mask;
  _Atomic(struct ncs_rec_comm *) slots[];
} rec_table;

typedef struct rec_state {
  rec_entry *entries;
  size_t ring_bytes;
  uint64_t mask;     /* slots - 1; slots is the power of two >= capacity */
  uint64_t capacity; /* N of NCCLSHIM_RECORD=N: the last N calls are dumped */
  _Atomic uint64_t next;
  _Atomic uint64_t first; /* calls before this index are not this process's (a fork) */

  /* Communicators (record_comms.c). */
  _Atomic(rec_table *) table;
  size_t live;
  pthread_mutex_t lock; /* writers of the table, the free queue and the record list */
  _Atomic(struct ncs_rec_comm *) all;
  struct ncs_rec_comm *ended_head, *ended_tail; /* listed in dumps still */
  struct ncs_rec_comm *spare;                   /* to reuse */
  size_t ended;
  _Atomic uint32_t global_dumped; /* error dumps for calls without a communicator */
  _Atomic uint64_t suppressed;    /* error dumps skipped by the rate limit since the last dump */
  atomic_flag busy;               /* a dump is being written */
  rec_hang_seen hang;

  _Atomic int process_rank; /* rank in the first communicator made from a unique id */
  _Atomic int nccl_version;
  int signal; /* NCCLSHIM_RECORD_SIGNAL, 0 if none */
  int at_exit;
  int hang_ms; /* NCCLSHIM_RECORD_HANG_MS, 0 if none */
  int dir_fd;  /* NCCLSHIM_RECORD_DIR, opened at start */
  dev_t dir_dev;
  ino_t dir_ino;
  char dir[PATH_MAX];
  uint64_t name_suffix; /* 0, or the random suffix of the dump's name, once its plain name
                           could not be taken (another user's file in a sticky directory) */
  char host[72];
  char boot_id[40];
  /* Identity: a random id per process (a forked child draws its own), and the secret key of
   * the hashes that stand for pointers in a dump and of the temporary file names. */
  uint64_t process_id, parent_process_id; /* parent: 0 unless forked */
  uint64_t key[2];
  _Atomic uint64_t names; /* temporary names drawn */
  _Atomic unsigned generation;
  pid_t pid; /* the pid the identity was drawn for: another one in a dump means a fork */
} rec_state;

/* record_state.c: the process's recorder, NULL while it is off (written by record_start.c
 * alone), and each thread's place in it. */
extern rec_state *ncs_rec;

/* Per thread: how deep in recorded calls (NCCL calling its own names through the drop-in
 * makes it 2), the thread id, asked of the kernel once, and the communicator it used last
 * with its record (a loop of calls on one communicator skips the table). */
typedef struct rec_thread {
  int depth;
  int tid;
  uintptr_t comm;
  struct ncs_rec_comm *record;
} rec_thread;
extern __thread rec_thread ncs_rec_here NCCLSHIM_THREAD_MODEL;
/* In a forked child, on the thread that forked: its thread id is asked again. */
void ncs_rec_thread_forked(void);

/* record_comms.c */
struct ncs_rec_comm *ncs_rec_find(const void *comm);
struct ncs_rec_comm *ncs_rec_add(const void *comm);
void ncs_rec_end_comm(const void *comm, int fn);
int ncs_rec_comms_init(rec_state *r);
/* In a forked child: the table's lock made afresh (another thread may have held it). */
void ncs_rec_comms_reset(rec_state *r);

/* record_id.c: the keys, the process id, the boot id and the host name at start; a new
 * process id (and generation, and no calls yet) in a forked child. */
void ncs_rec_identity(rec_state *r);
void ncs_rec_forked(rec_state *r);
/* The id of a child that the fork handler did not reach (a vfork child, sharing its parent's
 * memory): computed from its pid and start time, the same at each of its dumps, stored
 * nowhere. */
uint64_t ncs_rec_child_id(const rec_state *r);

/* A keyed 64-bit hash (SipHash-2-4 of one word): what a dump writes for a pointer. */
uint64_t ncs_rec_hash(const rec_state *r, uint64_t value);

#endif
