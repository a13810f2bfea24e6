/* A job that agrees with itself: one all-gather of every rank's fingerprint record, compared
 * with rank 0's, within one deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclshim/diag.h"
#include "comm_internal.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/nccl_plugins.h"

#define RECORD NCCLSHIM_AGREE_RECORD

/* The NCCL_* settings every rank must share: those that pick the algorithm, the protocol, the
 * transports, the plugins and the channel and buffer counts. Ranks that differ here build
 * different plans for the same collective and hang, or never connect. Per-node settings (the
 * interface names, NCCL_IB_HCA, debug output) are left out on purpose. docs/collectives.md. */
static const char *const settings[] = {
    "NCCL_PROTO",           "NCCL_ALGO",           "NCCL_NET",
    "NCCL_NET_PLUGIN",      "NCCL_TUNER_PLUGIN",   "NCCL_ENV_PLUGIN",
    "NCCL_GIN_PLUGIN",      "NCCL_GIN_ENABLE",     "NCCL_COLLNET_ENABLE",
    "NCCL_NVLS_ENABLE",     "NCCL_P2P_DISABLE",    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",      "NCCL_CUMEM_ENABLE",   "NCCL_WIN_ENABLE",
    "NCCL_MIN_NCHANNELS",   "NCCL_MAX_NCHANNELS",  "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",        "NCCL_NTHREADS",       "NCCL_BUFFSIZE",
    "NCCL_LL_BUFFSIZE",     "NCCL_LL128_BUFFSIZE", "NCCL_CROSS_NIC",
    "NCCL_RUNTIME_CONNECT", "NCCL_NVLS_CHUNKSIZE", "NCCL_P2P_NET_CHUNKSIZE"};

typedef struct writer {
  char *buf;
  size_t size, used;
} writer;

static void put(writer *w, const char *key, const char *value) {
  if (w->used >= w->size) return;
  int n = snprintf(w->buf + w->used, w->size - w->used, "%s=%.96s\n", key, value);
  if (n > 0) w->used += (size_t)n < w->size - w->used ? (size_t)n : w->size - w->used - 1;
}

static void put_plugins(writer *w, ncclshim_nccl *nccl) {
  ncclshim_plugin_list *list = NULL;
  if (ncclshim_nccl_plugins(nccl, &list) != NCCLSHIM_OK) return;
  for (size_t i = 0; i < ncclshim_plugin_list_count(list); i++) {
    const ncclshim_plugin *p = ncclshim_plugin_list_entry(list, i);
    if (p->verdict == NCCLSHIM_PLUGIN_ABSENT) continue;
    char key[32], value[160];
    const char *base = p->path ? strrchr(p->path, '/') + 1 : p->requested;
    snprintf(key, sizeof(key), "plugin.%s", ncclshim_plugin_kind_name(p->kind));
    snprintf(value, sizeof(value), "%s:%s", base,
             p->chosen ? p->chosen : ncclshim_plugin_verdict_name(p->verdict));
    put(w, key, value);
  }
  ncclshim_plugin_list_free(list);
}

const char *ncclshim_agree_record(ncclshim_nccl *nccl, char *buf, size_t size) {
  if (buf == NULL || size == 0) return buf;
  nccl = ncs_comm_resolve(nccl);
  writer w = {buf, size, 0};
  buf[0] = '\0';
  char text[128], fingerprint[128];
  ncclshim_format_version(ncclshim_nccl_version(nccl), text, sizeof(text));
  snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", ncclshim_nccl_build(nccl));
  put(&w, "nccl", text);
  /* The library's identity: the fingerprint up to its capability and environment parts. */
  ncclshim_nccl_fingerprint(nccl, fingerprint, sizeof(fingerprint));
  char *cut = strstr(fingerprint, "-c");
  if (cut != NULL) *cut = '\0';
  put(&w, "library", fingerprint);
  const ncclshim_cuda *cuda = ncclshim_cuda_default();
  int driver = ncclshim_cuda_driver_version(cuda, NULL, NULL);
  put(&w, "driver", driver > 0 ? ncclshim_cuda_format_version(driver, text, sizeof(text)) : "none");
  put_plugins(&w, nccl);
  for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
    const char *value = getenv(settings[i]);
    if (value != NULL) put(&w, settings[i], value);
  }
  /* '@' lines name the rank for the message and are never compared. */
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  put(&w, "@host", host);
  return buf;
}

/* ---- Comparing ------------------------------------------------------------------------ */

/* The value of `key` in a record ("key=value\n" lines), copied into out; 0 when absent. */
static int lookup(const char *record, const char *key, char *out, size_t size) {
  size_t n = strlen(key);
  for (const char *line = record; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
    if (strncmp(line, key, n) != 0 || line[n] != '=') continue;
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line - n - 1) : strlen(line + n + 1);
    snprintf(out, size, "%.*s", (int)len, line + n + 1);
    return 1;
  }
  return 0;
}

/* Append to `msg` every key on which `mine` differs from `ref`, looking from `from`'s keys. */
static int differences(const char *from, const char *ref, const char *mine, int ref_is_from,
                       char *msg, size_t size) {
  int found = 0;
  for (const char *line = from; *line;) {
    const char *eq = strchr(line, '='), *end = strchr(line, '\n');
    if (eq == NULL || (end != NULL && eq > end)) break;
    char key[64], a[128], b[128];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - line), line);
    int in_ref = lookup(ref, key, a, sizeof(a)), in_mine = lookup(mine, key, b, sizeof(b));
    /* A key both have is compared once, from the reference's side. */
    if (key[0] != '@' && (!in_ref || !in_mine || (ref_is_from && strcmp(a, b) != 0))) {
      size_t used = strlen(msg);
      if (in_mine && in_ref)
        snprintf(msg + used, size - used, "%s %s=%s, rank 0 has %s", found ? ";" : "", key, b, a);
      else if (in_mine)
        snprintf(msg + used, size - used, "%s %s=%s, rank 0 has it unset", found ? ";" : "", key,
                 b);
      else if (ref_is_from)
        snprintf(msg + used, size - used, "%s %s unset, rank 0 has %s", found ? ";" : "", key, a);
      found = 1;
    }
    line = end ? end + 1 : line + strlen(line);
  }
  return found;
}

/* OK when every slot equals slot 0; UNAVAILABLE naming each rank that differs. */
static ncclshim_status compare(const char *slots, int nranks) {
  char msg[2048], host0[64] = "?";
  const char *ref = slots;
  lookup(ref, "@host", host0, sizeof(host0));
  snprintf(msg, sizeof(msg), "ncclshim_comm_agree: ranks disagree with rank 0 (host %s):", host0);
  int differing = 0, listed = 0;
  for (int r = 1; r < nranks; r++) {
    const char *mine = slots + (size_t)r * RECORD;
    char one[768] = "", host[64] = "?";
    int a = differences(ref, ref, mine, 1, one, sizeof(one));
    int b = differences(mine, ref, mine, 0, one + strlen(one), sizeof(one) - strlen(one));
    if (!a && !b) continue;
    differing++;
    if (strlen(msg) + strlen(one) + 80 >= sizeof(msg)) continue;
    lookup(mine, "@host", host, sizeof(host));
    size_t used = strlen(msg);
    snprintf(msg + used, sizeof(msg) - used, "%s rank %d (host %s):%s", listed++ ? " |" : "", r,
             host, one);
  }
  if (differing == 0) return NCCLSHIM_OK;
  if (listed < differing) {
    size_t used = strlen(msg);
    snprintf(msg + used, sizeof(msg) - used, " | and %d more ranks", differing - listed);
  }
  return ncs_fail(NCCLSHIM_UNAVAILABLE, "%s", msg);
}

/* ---- The all-gather ---------------------------------------------------------------------- */

typedef struct buffers {
  const ncclshim_cuda *cuda;
  CUstream stream;
  CUdeviceptr send, recv;
} buffers;

static ncclshim_status cuda_failed(const ncclshim_cuda *cuda, const char *call, int result) {
  return ncs_fail(NCCLSHIM_CUDA_ERROR, "ncclshim_comm_agree: %s failed: %s (%d)", call,
                  ncclshim_cuda_result_name(cuda, result), result);
}

static void release(buffers *b) {
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(b->cuda);
  if (b->send) t->cuMemFree(b->send);
  if (b->recv) t->cuMemFree(b->recv);
  if (b->stream) ncclshim_cuda_stream_destroy(b->cuda, b->stream);
}

static ncclshim_status prepare(buffers *b, const char *record, int nranks) {
  b->cuda = ncclshim_cuda_default();
  if (ncclshim_cuda_status(b->cuda) != NCCLSHIM_OK)
    return ncs_fail(NCCLSHIM_DRIVER_UNAVAILABLE,
                    "ncclshim_comm_agree: no usable CUDA driver for the device buffers (%s)",
                    ncclshim_cuda_message(b->cuda));
  const ncclshim_cuda_table *t = ncclshim_cuda_functions(b->cuda);
  /* A blocking stream (flags 0): it waits for the legacy stream, where cuMemcpyHtoD's DMA from
   * pageable memory may still be running when the call returns. */
  ncclshim_status status = ncclshim_cuda_stream_create(b->cuda, 0, &b->stream);
  if (status != NCCLSHIM_OK) return status;
  int r = t->cuMemAlloc(&b->send, RECORD);
  if (r != 0) return cuda_failed(b->cuda, "cuMemAlloc", r);
  if ((r = t->cuMemAlloc(&b->recv, (size_t)RECORD * (size_t)nranks)) != 0)
    return cuda_failed(b->cuda, "cuMemAlloc", r);
  if ((r = t->cuMemcpyHtoD(b->send, record, RECORD)) != 0)
    return cuda_failed(b->cuda, "cuMemcpyHtoD", r);
  return NCCLSHIM_OK;
}

/* The all-gather on `stream`, finished within the deadline: NCCL's enqueue (a non-blocking
 * communicator answers ncclInProgress), then the stream, the communicator watched meanwhile.
 * *seen gets the NCCL code behind an NCCL_ERROR. */
static ncclshim_status gather(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner,
                              buffers *b, int64_t deadline, int timeout_ms, ncclResult_t *seen) {
  ncclResult_t r = ncclshim_nccl_functions(nccl)->ncclAllGather(
      (const void *)(uintptr_t)b->send, (void *)(uintptr_t)b->recv, RECORD, ncclUint8, comm,
      (cudaStream_t)b->stream);
  *seen = r;
  if (r != ncclSuccess && r != ncclInProgress) return ncclshim_nccl_check(nccl, r, "ncclAllGather");
  ncclshim_status status = ncs_wait_until(nccl, comm, owner, deadline, timeout_ms, seen);
  if (status != NCCLSHIM_OK) return status;
  return ncs_wait_stream_until(
      b->cuda, b->stream, nccl, comm, owner, deadline, timeout_ms,
      "the all-gather of fingerprints is still running",
      ": a rank did not call ncclshim_comm_agree, or the ranks' settings differ so much that "
      "NCCL's own all-gather cannot run (NCCL_PROTO set on some ranks only does this on 2 H200s)",
      seen);
}

/* owner: the wrapper of `comm`, whose polls stop once an abort has started; NULL for a bare one. */
static ncclshim_status agree(ncclshim_nccl *nccl, ncclComm_t comm, ncclshim_comm *owner, int nranks,
                             int timeout_ms, ncclResult_t *seen) {
  int64_t deadline = ncs_deadline_ns(timeout_ms);
  char *record = calloc(1, RECORD), *slots = calloc((size_t)nranks, RECORD);
  buffers b = {0};
  ncclshim_status status = record && slots ? NCCLSHIM_OK : NCCLSHIM_OUT_OF_MEMORY;
  if (status != NCCLSHIM_OK) {
    ncs_fail(status, "ncclshim_comm_agree: out of memory for %d records", nranks);
  } else {
    ncclshim_agree_record(nccl, record, RECORD);
    status = prepare(&b, record, nranks);
    if (status == NCCLSHIM_OK) status = gather(nccl, comm, owner, &b, deadline, timeout_ms, seen);
    if (status == NCCLSHIM_OK) {
      int r = ncclshim_cuda_functions(b.cuda)->cuMemcpyDtoH(slots, b.recv,
                                                            (size_t)RECORD * (size_t)nranks);
      status = r ? cuda_failed(b.cuda, "cuMemcpyDtoH", r) : NCCLSHIM_OK;
    }
    /* After a timeout NCCL may still write the buffers: they are left allocated. */
    if (status != NCCLSHIM_TIMEOUT) release(&b);
    if (status == NCCLSHIM_OK) {
      for (int r = 0; r < nranks; r++) slots[(size_t)r * RECORD + RECORD - 1] = '\0';
      status = compare(slots, nranks);
    }
  }
  free(record);
  free(slots);
  return status;
}

ncclshim_status ncclshim_nccl_agree(ncclshim_nccl *nccl, ncclComm_t comm, int nranks,
                                    int timeout_ms) {
  nccl = ncs_comm_resolve(nccl);
  if (comm == NULL || nranks < 1 || timeout_ms < 0)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_nccl_agree: comm %s, nranks %d, timeout %d ms",
                    comm ? "given" : "NULL", nranks, timeout_ms);
  ncclshim_status status = ncs_comm_usable(nccl, "ncclshim_nccl_agree");
  if (status != NCCLSHIM_OK) return status;
  ncclResult_t seen = ncclSuccess;
  return agree(nccl, comm, NULL, nranks, timeout_ms, &seen);
}

ncclshim_status ncclshim_comm_agree(ncclshim_comm *comm, int timeout_ms) {
  if (comm == NULL) return ncs_fail(NCCLSHIM_INVALID_ARGUMENT, "ncclshim_comm_agree: comm is NULL");
  if (timeout_ms < 0) return ncs_negative_timeout("ncclshim_comm_agree", timeout_ms);
  ncclComm_t raw = ncclshim_comm_raw(comm);
  if (raw == NULL)
    return ncs_fail(NCCLSHIM_INVALID_ARGUMENT,
                    "ncclshim_comm_agree: the communicator is %s, not ready",
                    ncclshim_comm_state_name(ncclshim_comm_state_of(comm)));
  ncclResult_t seen = ncclSuccess;
  ncclshim_status status = agree(comm->nccl, raw, comm, comm->nranks, timeout_ms, &seen);
  /* An NCCL error seen on the way makes the communicator FAILED, as any wait does. */
  return status == NCCLSHIM_NCCL_ERROR ? ncs_comm_note(comm, status, seen) : status;
}
