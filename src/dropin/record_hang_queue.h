/* The hang dump's state (record_hang_queue.c), shared by the enqueueing side (record_hang.c)
 * and the checking thread (record_hang_thread.c); every field under `ncs_hang.lock`. */
#ifndef NCCLSHIM_DROPIN_RECORD_HANG_QUEUE_H
#define NCCLSHIM_DROPIN_RECORD_HANG_QUEUE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "ncclshim/cuda_abi.h"
#include "record_cuda.h"

enum { HANG_SLOTS = 4096, HANG_STREAMS = 16 };

/* An event and the operations it covers: the first one's call, and how many after it. */
typedef struct ncs_hang_entry {
  CUevent event;
  CUcontext ctx;
  const void *stream;
  uint64_t since_ns;      /* CLOCK_MONOTONIC once its event was recorded: the deadline starts */
  uint64_t index;         /* the first operation's place in the ring, plus one */
  uint64_t seq, last_seq; /* the first operation's sequence number, and the last one's */
  uint64_t after;         /* operations after the first under this event, on its stream */
  int fn;
} ncs_hang_entry;

/* A stream that shares: its newest entry, and the operations waiting for its next event. */
typedef struct ncs_hang_stream {
  const void *stream; /* NULL: a free row */
  CUcontext ctx;      /* its newest entry's */
  uint64_t newest;    /* the id of its newest entry */
  int waits;          /* 1: `waiting` (waiting.after + 1 operations) has no event yet */
  ncs_hang_entry waiting;
} ncs_hang_stream;

typedef struct ncs_hang_state {
  pthread_mutex_t lock;
  pthread_cond_t wake;              /* CLOCK_MONOTONIC */
  ncs_hang_entry queue[HANG_SLOTS]; /* oldest first; an entry's id counts every push */
  size_t head, count;
  uint64_t popped; /* the id of the head */
  struct {
    CUevent event;
    CUcontext ctx; /* the context it was made in: only reused there */
  } spare[HANG_SLOTS];
  size_t spares;
  ncs_hang_stream streams[HANG_STREAMS];
  pid_t pid; /* the process whose thread this is: a forked child starts afresh */
  int started, stop, fired;
  int forked; /* set in a forked child (pthread_atfork), until its first operation */
  pthread_t thread;
} ncs_hang_state;

extern ncs_hang_state ncs_hang;

uint64_t ncs_hang_now_ns(void);
/* The newest entry joins the queue (when full, the newest there gives way); returns its id. */
uint64_t ncs_hang_push(const rec_driver *d, const ncs_hang_entry *e);
/* The head leaves the queue; a completed event is kept for reuse. */
void ncs_hang_pop(int completed);
/* The row of `stream`, or NULL; `create` takes a free row (none free: NULL). */
ncs_hang_stream *ncs_hang_stream_of(const void *stream, int create);
/* Whether the row's newest entry is still in the queue (not yet seen complete). */
int ncs_hang_pending(const ncs_hang_stream *s);
/* A spare event made in `ctx`, or NULL. */
CUevent ncs_hang_spare(CUcontext ctx);
/* Records an event for `e` on its stream (`event`, or a new one); the lock not held. 0 when
 * none could be recorded: its operations then go unwatched. */
int ncs_hang_record(const rec_driver *d, ncs_hang_entry *e, CUevent event);
/* Forget every entry, spare and stream (a forked child's, whose events are its parent's). */
void ncs_hang_forget(void);

#endif
