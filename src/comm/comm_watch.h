/* A watched communicator's ring of recorded operations, shared by the thread that records
 * (comm_watch.c) and the watchdog's thread (comm_watchdog.c). For src/comm only. */
#ifndef NCCLSHIM_COMM_WATCH_H
#define NCCLSHIM_COMM_WATCH_H

#include "comm_internal.h"

/* Events per communicator: operations outstanding at once before the newest event is
 * recorded again (which keeps the oldest operations' deadlines). */
enum { NCCLSHIM_WATCH_EVENTS = 256 };

typedef struct ncclshim_watch_slot {
  CUevent event;
  const char *call;
  size_t count;
  int type;
  uint64_t seq;
  int64_t start_ns; /* when it was recorded */
} ncclshim_watch_slot;

typedef struct ncclshim_watch {
  ncclshim_comm *comm; /* holds a reference */
  ncclshim_watchdog *dog;
  int64_t timeout_ns;
  CUcontext context;
  struct ncclshim_watch *next; /* the watchdog's list, under its lock */
  pthread_mutex_t lock;        /* guards the ring */
  unsigned oldest, outstanding;
  uint64_t seq;
  ncclshim_watch_slot slots[NCCLSHIM_WATCH_EVENTS];
} ncclshim_watch;

struct ncclshim_watchdog {
  pthread_t thread;
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;  /* on CLOCK_MONOTONIC */
  int stop;
  int64_t interval_ns;
  const ncclshim_cuda *cuda;
  ncclshim_watchdog_callback on_failure;
  void *user;
  ncclshim_watch *watches;
};

/* Destroy a watch's events and free it, dropping its reference on the communicator. */
void ncclshim_watch_free(ncclshim_watch *watch);

#endif
