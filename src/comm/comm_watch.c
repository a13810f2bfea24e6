/* Watching a communicator: its tracker, its references, watch and unwatch. */
#include <stdlib.h>

#include "comm_watch.h"

const char *ncclshim_comm_failure(const ncclshim_comm *comm) {
  if (comm == NULL || !atomic_load(&comm->failed_by_watchdog)) return "";
  return comm->reason;
}

void ncs_watchdog_unref(ncclshim_watchdog *dog) {
  if (atomic_fetch_sub(&dog->refs, 1) != 1) return;
  pthread_cond_destroy(&dog->wake);
  pthread_mutex_destroy(&dog->lock);
  free(dog);
}

void ncs_watch_ref(ncs_watch *watch) { atomic_fetch_add(&watch->refs, 1); }

void ncs_watch_unref(ncs_watch *watch) {
  if (atomic_fetch_sub(&watch->refs, 1) != 1) return;
  ncs_track_destroy(watch->track);
  ncs_comm_unref(watch->comm);
  ncs_watchdog_unref(watch->dog);
  free(watch);
}

/* watch, unwatch and stop change comm->watch under it (never across a driver call). A
 * recording thread only pins and unpins the link, with atomics. */
static pthread_mutex_t links = PTHREAD_MUTEX_INITIALIZER;

ncclshim_status ncclshim_comm_watch(ncclshim_comm *comm, ncclshim_watchdog *dog, int timeout_ms) {
  const char *problem = NULL;
  if (comm == NULL || dog == NULL)
    problem = comm == NULL ? "comm is NULL" : "the watchdog is NULL";
  else if (timeout_ms < 1)
    problem = "the timeout is below 1 ms";
  else if (ncs_comm_get_state(comm) != NCCLSHIM_COMM_READY)
    problem = "the communicator is not ready (watch it once its init is done)";
  else if (atomic_load(&comm->watch) != NULL)
    problem = "the communicator is watched already";
  if (problem != NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_comm_watch: %s (timeout %d ms)", problem,
                    timeout_ms);
  ncs_watch *watch = calloc(1, sizeof(*watch));
  if (watch == NULL) {
    return ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_comm_watch: out of memory");
  }
  ncs_comm_ref(comm);
  atomic_fetch_add(&dog->refs, 1);
  atomic_init(&watch->refs, 1);
  watch->comm = comm;
  watch->dog = dog;
  watch->cuda = dog->cuda;
  watch->timeout_ns = (int64_t)timeout_ms * 1000000;
  ncclshim_status status = ncclshim_cuda_status(dog->cuda);
  if (status == NCCLSHIM_OK && (watch->track = ncs_track_create(&dog->driver)) == NULL)
    status = ncs_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_comm_watch: out of memory");
  if (status != NCCLSHIM_OK) {
    ncs_watch_unref(watch);
    return status;
  }
  pthread_mutex_lock(&links);
  ncs_watch *expected = NULL;
  int linked = atomic_compare_exchange_strong(&comm->watch, &expected, watch);
  if (linked) {
    ncs_watch_ref(watch); /* the list's */
    pthread_mutex_lock(&dog->lock);
    watch->next = dog->watches;
    dog->watches = watch;
    dog->nwatches++;
    pthread_mutex_unlock(&dog->lock);
  }
  pthread_mutex_unlock(&links);
  if (!linked) { /* another thread watched it meanwhile */
    ncs_watch_unref(watch);
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_comm_watch: the communicator is watched already (timeout %d ms)",
                    timeout_ms);
  }
  return NCCLSHIM_OK;
}

ncs_watch *ncs_watch_unlink(ncclshim_comm *comm, ncs_watch *only) {
  pthread_mutex_lock(&links);
  uintptr_t bits = (uintptr_t)atomic_load(&comm->watch);
  ncs_watch *watch = (ncs_watch *)(bits & ~WATCH_PINNED);
  if (watch == NULL || (only != NULL && watch != only)) {
    pthread_mutex_unlock(&links);
    return NULL;
  }
  /* Alive: the link's reference goes only once the link is cleared, below. */
  ncs_watch_ref(watch);
  bits = (uintptr_t)atomic_exchange(&comm->watch, NULL);
  pthread_mutex_unlock(&links);
  atomic_store(&watch->unwatched, 1);
  if (!(bits & WATCH_PINNED)) ncs_watch_unref(watch); /* else the pinning thread drops it */
  return watch;
}

/* Take the watch off its watchdog's list; 1 when it was there (its reference is the
 * caller's to drop). */
static int unlist(ncs_watch *watch) {
  ncclshim_watchdog *dog = watch->dog;
  int found = 0;
  pthread_mutex_lock(&dog->lock);
  for (ncs_watch **p = &dog->watches; *p != NULL; p = &(*p)->next) {
    if (*p == watch) {
      *p = watch->next;
      dog->nwatches--;
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&dog->lock);
  return found;
}

ncclshim_status ncclshim_comm_unwatch(ncclshim_comm *comm) {
  ncs_watch *watch = comm != NULL ? ncs_watch_unlink(comm, NULL) : NULL;
  if (watch == NULL) return NCCLSHIM_OK;
  if (unlist(watch)) ncs_watch_unref(watch);
  ncs_watch_unref(watch);
  return NCCLSHIM_OK;
}
