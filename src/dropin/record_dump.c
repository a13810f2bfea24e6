/* The recorder's dump: one JSON-lines file per process, written with async-signal-safe calls
 * only (open, write, rename, clock_gettime; no stdio, no malloc), so that the same code serves
 * an error return, an asynchronous error, the user's signal and exit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* rename */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclshim/comm.h"
#include "record.h"
#include "record_state.h"

typedef struct out {
  int fd;
  size_t used;
  char buf[4096];
} out;

static void flush(out *o) {
  for (size_t done = 0; done < o->used;) {
    ssize_t n = write(o->fd, o->buf + done, o->used - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += (size_t)n;
  }
  o->used = 0;
}

static void put(out *o, const char *s) {
  for (; *s; s++) {
    if (o->used == sizeof(o->buf)) flush(o);
    o->buf[o->used++] = *s;
  }
}

static void put_u64(out *o, uint64_t v) {
  char digits[24], *p = digits + sizeof(digits);
  *--p = '\0';
  do *--p = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put(o, p);
}

static void put_int(out *o, int64_t v) {
  if (v < 0) put(o, "-");
  put_u64(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static void put_hex(out *o, uint64_t v, int width) {
  char digits[20], *p = digits + sizeof(digits);
  *--p = '\0';
  for (int i = 0; i < width || v != 0; i++, v >>= 4) *--p = "0123456789abcdef"[v & 15];
  put(o, p);
}

/* A JSON string; the bytes given are names and host names, escaped all the same. */
static void put_string(out *o, const char *s) {
  put(o, "\"");
  for (; *s; s++) {
    char c[2] = {*s, '\0'};
    if (*s == '"' || *s == '\\') {
      put(o, "\\");
      put(o, c);
    } else if ((unsigned char)*s < 0x20) {
      put(o, "\\u00");
      put_hex(o, (unsigned char)*s, 2);
    } else {
      put(o, c);
    }
  }
  put(o, "\"");
}

/* ,"key":value for the int fields that have a value. */
static void put_field(out *o, const char *key, int64_t value) {
  if (value == NCCLSHIM_REC_NONE) return;
  put(o, ",\"");
  put(o, key);
  put(o, "\":");
  put_int(o, value);
}

static const char *const datatype_names[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                             "ncclUint32",   "ncclInt64",      "ncclUint64",
                                             "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                             "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
static const char *const op_names[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};

static void put_named(out *o, const char *key, int value, const char *const *names, int count) {
  if (value == NCCLSHIM_REC_NONE) return;
  put_field(o, key, value);
  put(o, ",\"");
  put(o, key);
  put(o, "_name\":");
  put_string(o, value >= 0 && value < count ? names[value] : "custom");
}

static void put_comm_id(out *o, uint64_t id) {
  put(o, ",\"comm_id\":");
  if (id == 0) {
    put(o, "null");
    return;
  }
  put(o, "\"");
  put_hex(o, id, 16);
  put(o, "\"");
}

static void put_pointer(out *o, const char *key, uintptr_t value) {
  put(o, ",\"");
  put(o, key);
  put(o, "\":\"0x");
  put_hex(o, value, 1);
  put(o, "\"");
}

static void put_result(out *o, int result) {
  if (result == NCCLSHIM_REC_NO_RESULT) return;
  if (result == NCCLSHIM_REC_PENDING) {
    put(o, ",\"result\":null,\"state\":\"pending\"");
    return;
  }
  put_field(o, "result", result);
  put(o, ",\"result_name\":");
  put_string(o, ncclshim_nccl_result_name(result));
  put(o, ",\"state\":\"returned\"");
}

static void put_call(out *o, uint64_t index, const rec_entry *e, int result) {
  put(o, "{\"kind\":\"call\",\"index\":");
  put_u64(o, index);
  put(o, ",\"function\":");
  put_string(o, ncclshim_nccl_function_name(e->fn));
  if (e->comm != 0) put_pointer(o, "comm", e->comm);
  if (e->comm != 0) put_comm_id(o, e->comm_id);
  put_field(o, "rank", e->rank);
  if (e->seq != 0) {
    put(o, ",\"seq\":");
    put_u64(o, e->seq);
  }
  if (e->has_count) {
    put(o, ",\"count\":");
    put_u64(o, e->count);
  }
  put_named(o, "datatype", e->datatype, datatype_names, 12);
  put_named(o, "op", e->op, op_names, 5);
  put_field(o, "root", e->root);
  put_field(o, "peer", e->peer);
  if (e->seq != 0) put_pointer(o, "stream", e->stream);
  put_field(o, "thread", e->thread);
  put(o, ",\"start_ns\":");
  put_u64(o, e->start_ns);
  put_result(o, result);
  put(o, "}\n");
}

static void put_comms(out *o, const rec_state *r) {
  for (size_t i = 0; i < REC_COMMS; i++) {
    const ncclshim_rec_comm *c = &r->comms[i];
    uintptr_t key = atomic_load(&c->key);
    if (key == 0) continue;
    put(o, "{\"kind\":\"comm\"");
    put_pointer(o, "comm", key);
    put_comm_id(o, atomic_load(&c->id));
    put_field(o, "rank", atomic_load(&c->rank));
    put_field(o, "nranks", atomic_load(&c->nranks));
    put(o, ",\"last_seq\":");
    put_u64(o, atomic_load(&c->ops));
    int by = atomic_load(&c->created_by);
    if (by >= 0) {
      put(o, ",\"created_by\":");
      put_string(o, ncclshim_nccl_function_name(by));
    }
    put_field(o, "async_error", atomic_load(&c->async_error));
    put(o, "}\n");
  }
}

/* The oldest call still in the ring first; a slot being rewritten is left out. */
static uint64_t put_calls(out *o, const rec_state *r) {
  uint64_t end = atomic_load(&((rec_state *)r)->next), written = 0;
  uint64_t begin = end > r->capacity ? end - r->capacity : 0;
  for (uint64_t i = begin; i < end; i++) {
    rec_entry *e = &r->entries[i & r->mask];
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    rec_entry copy;
    memcpy((char *)&copy + offsetof(rec_entry, fn), (char *)e + offsetof(rec_entry, fn),
           sizeof(copy) - offsetof(rec_entry, fn));
    int result = atomic_load_explicit(&e->result, memory_order_relaxed);
    /* The copy must be done before the tag is read again: a release RMW (adding nothing)
     * orders it, where a fence would too but ThreadSanitizer does not model fences. Dumps
     * are rare, so the write to the slot's line costs nothing that matters. */
    if (tag != i + 1 || atomic_fetch_add_explicit(&e->tag, 0, memory_order_acq_rel) != tag)
      continue;
    put_call(o, i, &copy, result);
    written++;
  }
  return written;
}

static void put_header(out *o, const rec_state *r, const char *why, int fn, int value) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  put(o, "{\"kind\":\"header\",\"format\":\"ncclshim-record/1\",\"host\":");
  put_string(o, r->host);
  put(o, ",\"pid\":");
  put_u64(o, (uint64_t)getpid());
  put_field(o, "rank", atomic_load(&((rec_state *)r)->process_rank));
  put(o, ",\"reason\":");
  put_string(o, why);
  if (fn >= 0) {
    put(o, ",\"function\":");
    put_string(o, ncclshim_nccl_function_name(fn));
  }
  put_field(o, strcmp(why, "signal") == 0 ? "signal" : "result", value);
  put_field(o, "nccl_version", r->nccl_version);
  put(o, ",\"capacity\":");
  put_u64(o, r->capacity);
  put(o, ",\"calls\":");
  put_u64(o, atomic_load(&((rec_state *)r)->next));
  put(o, ",\"time_ns\":");
  put_u64(o, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
  put(o, "}\n");
}

/* DIR/ncclshim-record-HOST-PID-rankR.jsonl ("-norank" before any communicator). */
static void file_name(out *o, const rec_state *r, const char *suffix) {
  o->used = 0;
  put(o, r->dir);
  put(o, "/ncclshim-record-");
  put(o, r->host);
  put(o, "-");
  put_u64(o, (uint64_t)getpid());
  int rank = atomic_load(&((rec_state *)r)->process_rank);
  if (rank == NCCLSHIM_REC_NONE) {
    put(o, "-norank");
  } else {
    put(o, "-rank");
    put_int(o, rank);
  }
  put(o, ".jsonl");
  put(o, suffix);
  o->buf[o->used < sizeof(o->buf) ? o->used : sizeof(o->buf) - 1] = '\0';
}

static void say(const char *a, const char *b, const char *c) {
  out o = {.fd = 2};
  put(&o, "ncclshim recorder: ");
  put(&o, a);
  put(&o, b);
  put(&o, c);
  put(&o, "\n");
  flush(&o);
}

void ncclshim_rec_dump(const char *why, int fn, int value) {
  static atomic_flag busy = ATOMIC_FLAG_INIT;
  rec_state *r = ncclshim_rec;
  if (r == NULL || atomic_flag_test_and_set(&busy)) return; /* one dump at a time */
  int saved_errno = errno;
  out path, temp;
  file_name(&path, r, "");
  file_name(&temp, r, ".tmp");
  out o = {.fd = open(temp.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (o.fd < 0) {
    say("cannot write ", temp.buf, "");
  } else {
    put_header(&o, r, why, fn, value);
    put_comms(&o, r);
    put_calls(&o, r);
    flush(&o);
    close(o.fd);
    if (rename(temp.buf, path.buf) == 0)
      say("wrote ", path.buf, why[0] == 'e' && why[1] == 'r' ? " (a call failed)" : "");
    else
      say("cannot rename to ", path.buf, "");
  }
  errno = saved_errno;
  atomic_flag_clear(&busy);
}
