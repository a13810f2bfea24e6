/* One look at a watched communicator, on the watchdog's thread: the tracker's look (its
 * completed events leave, the oldest operation not known done is found), then that
 * operation against its deadline and NCCL's asynchronous error. No driver call names a
 * program's stream here, and no lock is held across one. */
#include <stdio.h>

#include "comm_watch.h"

/* `label` with what a message must not carry raw escaped: quotes, backslashes and control
 * characters (as \n, \t, \xNN); other bytes, UTF-8 included, as they are. */
static void escape(const char *label, char *out, size_t size) {
  size_t o = 0;
  for (const unsigned char *c = (const unsigned char *)label; *c != '\0' && o + 5 < size; c++) {
    if (*c == '"' || *c == '\\')
      o += (size_t)snprintf(out + o, size - o, "\\%c", *c);
    else if (*c == '\n')
      o += (size_t)snprintf(out + o, size - o, "\\n");
    else if (*c == '\t')
      o += (size_t)snprintf(out + o, size - o, "\\t");
    else if (*c < 0x20 || *c == 0x7f)
      o += (size_t)snprintf(out + o, size - o, "\\x%02x", *c);
    else
      out[o++] = (char)*c;
  }
  out[o] = '\0';
}

static void describe(const ncs_track_op *op, int64_t start_ns, int64_t now, char *buf,
                     size_t size) {
  long long ran = (long long)((now - start_ns) / 1000000);
  if (op->call == NULL) {
    char label[4 * NCS_TRACK_LABEL_BYTES + 1];
    escape(op->label, label, sizeof(label));
    snprintf(buf, size,
             "replay #%llu of CUDA graph \"%s\" (%zu collectives), which had run at least %lld ms",
             (unsigned long long)op->seq, label, op->count, ran);
  } else {
    /* Several operations under one event (recorded on one stream within one look): which of
     * them is not complete, the event cannot tell; the last one is not. */
    char more[96] = "";
    if (op->n > 1)
      snprintf(more, sizeof(more), " or one of the %llu after it on its stream (one event)",
               (unsigned long long)op->n - 1);
    snprintf(buf, size, "%s #%llu (count %zu, %s)%s, which had run at least %lld ms", op->call,
             (unsigned long long)op->seq, op->count,
             ncclshim_nccl_type_name((ncclDataType_t)op->type), more, ran);
  }
}

int ncs_watch_inspect(ncs_watch *w, CUcontext *current, ncs_watch_verdict *v, int64_t *due_ns) {
  ncclshim_comm *comm = w->comm;
  if (atomic_load(&w->unwatched) || ncs_comm_get_state(comm) != NCCLSHIM_COMM_READY) return 0;
  ncs_track_seen seen;
  int running = ncs_track_look(w->track, current, &seen);
  int64_t now = ncs_track_now_ns();
  char what[320] = "no recorded operation outstanding";
  if (running) describe(&seen.op, seen.start_ns, now, what, sizeof(what));
  if (seen.failed) {
    v->status = NCCLSHIM_CUDA_ERROR;
    v->code = ncclUnhandledCudaError;
    snprintf(v->text, sizeof(v->text), "%s failed with %s (%d) for %s", seen.why.call,
             ncclshim_cuda_result_name(w->cuda, seen.why.result), (int)seen.why.result, what);
    return 1;
  }
  /* Under the lock: an abort started meanwhile (not READY) may have freed NCCL's comm. */
  ncclResult_t r = ncclSuccess, async = ncclSuccess;
  pthread_mutex_lock(&comm->lock);
  if (comm->state == NCCLSHIM_COMM_READY)
    r = ncclshim_nccl_functions(comm->nccl)->ncclCommGetAsyncError(comm->comm, &async);
  pthread_mutex_unlock(&comm->lock);
  if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
    ncclResult_t code = r != ncclSuccess ? r : async;
    v->status = NCCLSHIM_NCCL_ERROR;
    v->code = code;
    snprintf(v->text, sizeof(v->text), "%s reported %s (%d) during %s",
             r != ncclSuccess ? "ncclCommGetAsyncError itself" : "ncclCommGetAsyncError",
             ncclshim_nccl_result_name(code), (int)code, what);
    return 1;
  }
  if (seen.pending && now - seen.start_ns < w->timeout_ns) {
    if (seen.start_ns + w->timeout_ns < *due_ns) *due_ns = seen.start_ns + w->timeout_ns;
    return 0;
  }
  if (seen.pending) {
    v->status = NCCLSHIM_TIMEOUT;
    v->code = ncclInProgress;
    snprintf(v->text, sizeof(v->text), "%s, past its deadline of %lld ms", what,
             (long long)(w->timeout_ns / 1000000));
    return 1;
  }
  return 0;
}
