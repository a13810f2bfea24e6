/* Watching a communicator: its event pool, and the enqueueing thread's one step per operation
 * (ncclshim_comm_record). The watchdog's thread, which reads the ring, is comm_watchdog.c. */
#include <stdlib.h>

#include "comm_watch.h"

enum { CU_EVENT_DISABLE_TIMING = 2 }; /* cuda.h's value: the cheapest event to record */

const char *ncclshim_nccl_type_name(ncclDataType_t type) {
  static const char *const names[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                      "ncclUint32",   "ncclInt64",      "ncclUint64",
                                      "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                      "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown type";
}

const char *ncclshim_comm_failure(const ncclshim_comm *comm) {
  if (comm == NULL || !atomic_load(&comm->failed_by_watchdog)) return "";
  return comm->reason;
}

void ncclshim_watch_free(ncclshim_watch *watch) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(watch->dog->cuda);
  for (int i = 0; i < NCCLSHIM_WATCH_EVENTS; i++)
    if (watch->slots[i].event != NULL) t->cuEventDestroy(watch->slots[i].event);
  pthread_mutex_destroy(&watch->lock);
  ncclshim_comm_unref(watch->comm);
  free(watch);
}

static ncclshim_status make_events(ncclshim_watch *watch) {
  for (int i = 0; i < NCCLSHIM_WATCH_EVENTS; i++) {
    ncclshim_status status = ncclshim_cuda_event_create(watch->dog->cuda, CU_EVENT_DISABLE_TIMING,
                                                        &watch->slots[i].event);
    if (status != NCCLSHIM_OK) return status;
  }
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_comm_watch(ncclshim_comm *comm, ncclshim_watchdog *dog, int timeout_ms) {
  const char *problem = NULL;
  if (comm == NULL || dog == NULL)
    problem = comm == NULL ? "comm is NULL" : "the watchdog is NULL";
  else if (timeout_ms < 1)
    problem = "the timeout is below 1 ms";
  else if (ncclshim_comm_get_state(comm) != NCCLSHIM_COMM_READY)
    problem = "the communicator is not ready (watch it once its init is done)";
  else if (atomic_load(&comm->watch) != NULL)
    problem = "the communicator is watched already";
  if (problem != NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_comm_watch: %s (timeout %d ms)",
                         problem, timeout_ms);
  ncclshim_watch *watch = calloc(1, sizeof(*watch));
  if (watch == NULL || pthread_mutex_init(&watch->lock, NULL) != 0) {
    free(watch);
    return ncclshim_fail(NCCLSHIM_OUT_OF_MEMORY, "ncclshim_comm_watch: out of memory");
  }
  ncclshim_comm_ref(comm);
  watch->comm = comm;
  watch->dog = dog;
  watch->timeout_ns = (int64_t)timeout_ms * 1000000;
  ncclshim_status status = ncclshim_cuda_status(dog->cuda);
  if (status == NCCLSHIM_OK &&
      ncclshim_cuda_functions(dog->cuda)->cuCtxGetCurrent(&watch->context) != 0)
    status = ncclshim_fail(NCCLSHIM_CUDA_ERROR, "ncclshim_comm_watch: cuCtxGetCurrent failed");
  if (status == NCCLSHIM_OK) status = make_events(watch);
  if (status != NCCLSHIM_OK) {
    ncclshim_watch_free(watch);
    return status;
  }
  pthread_mutex_lock(&dog->lock);
  watch->next = dog->watches;
  dog->watches = watch;
  atomic_store(&comm->watch, watch);
  pthread_mutex_unlock(&dog->lock);
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_comm_unwatch(ncclshim_comm *comm) {
  ncclshim_watch *watch = comm ? atomic_load(&comm->watch) : NULL;
  if (watch == NULL) return NCCLSHIM_OK;
  ncclshim_watchdog *dog = watch->dog;
  pthread_mutex_lock(&dog->lock); /* the watchdog is between passes: not reading it */
  for (ncclshim_watch **p = &dog->watches; *p != NULL; p = &(*p)->next) {
    if (*p == watch) {
      *p = watch->next;
      break;
    }
  }
  atomic_store(&comm->watch, NULL);
  pthread_mutex_unlock(&dog->lock);
  ncclshim_watch_free(watch);
  return NCCLSHIM_OK;
}

ncclshim_status ncclshim_comm_record(ncclshim_comm *comm, CUstream stream, const char *call,
                                     size_t count, ncclDataType_t type) {
  static const char who[] = "ncclshim_comm_record";
  if (comm == NULL) return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT, "%s: comm is NULL", who);
  if (atomic_load(&comm->failed_by_watchdog)) return ncclshim_comm_failed(comm, who);
  ncclshim_watch *watch = atomic_load(&comm->watch);
  if (watch == NULL)
    return ncclshim_fail(NCCLSHIM_INVALID_ARGUMENT,
                         "%s: the communicator (rank %d of %d) is not watched "
                         "(ncclshim_comm_watch)",
                         who, comm->rank, comm->nranks);
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(watch->dog->cuda);
  pthread_mutex_lock(&watch->lock);
  unsigned index;
  if (watch->outstanding < NCCLSHIM_WATCH_EVENTS) {
    index = (watch->oldest + watch->outstanding) % NCCLSHIM_WATCH_EVENTS;
  } else {
    /* Full: the newest event stands for this operation too. */
    index = (watch->oldest + NCCLSHIM_WATCH_EVENTS - 1) % NCCLSHIM_WATCH_EVENTS;
  }
  ncclshim_watch_slot *slot = &watch->slots[index];
  ncclshim_cu_result r = t->cuEventRecord(slot->event, stream);
  if (r == 0) {
    if (watch->outstanding < NCCLSHIM_WATCH_EVENTS) {
      watch->outstanding++;
      slot->start_ns = ncclshim_now_ns();
    }
    slot->call = call != NULL ? call : "an NCCL operation";
    slot->count = count;
    slot->type = (int)type;
    slot->seq = ++watch->seq;
  }
  pthread_mutex_unlock(&watch->lock);
  if (r != 0)
    return ncclshim_fail(NCCLSHIM_CUDA_ERROR, "%s: cuEventRecord failed: %s (%d)", who,
                         ncclshim_cuda_result_name(watch->dog->cuda, r), (int)r);
  return NCCLSHIM_OK;
}
