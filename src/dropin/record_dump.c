/* The recorder's dump: one JSON-lines file per process, written with async-signal-safe calls
 * only (openat, write, renameat, fstat, clock_gettime, sigprocmask, nanosleep; no stdio,
 * no malloc), so that the same code serves an error return, an asynchronous error, an abort,
 * a signal, a hang and exit. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h> /* renameat */
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclshim/comm.h"
#include "record.h"
#include "say.h"
#include "record_state.h"

/* A JSON string; the bytes given are names and host names, escaped all the same. */
static void put_string(ncs_out *o, const char *s) {
  ncs_out_put(o, "\"");
  for (; *s; s++) {
    char c[2] = {*s, '\0'};
    if (*s == '"' || *s == '\\') {
      ncs_out_put(o, "\\");
      ncs_out_put(o, c);
    } else if ((unsigned char)*s < 0x20) {
      ncs_out_put(o, "\\u00");
      ncs_out_hex(o, (unsigned char)*s, 2);
    } else {
      ncs_out_put(o, c);
    }
  }
  ncs_out_put(o, "\"");
}

/* ,"key":value for the int fields that have a value. */
static void put_field(ncs_out *o, const char *key, int64_t value) {
  if (value == NCCLSHIM_REC_NONE) return;
  ncs_out_put(o, ",\"");
  ncs_out_put(o, key);
  ncs_out_put(o, "\":");
  ncs_out_int(o, value);
}

static const char *const op_names[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};

/* ,"key":value,"key_name":"name" for a field that has a value. */
static void put_named(ncs_out *o, const char *key, int value, const char *name) {
  if (value == NCCLSHIM_REC_NONE) return;
  put_field(o, key, value);
  ncs_out_put(o, ",\"");
  ncs_out_put(o, key);
  ncs_out_put(o, "_name\":");
  put_string(o, name);
}

static void put_comm_id(ncs_out *o, uint64_t id) {
  ncs_out_put(o, ",\"comm_id\":");
  if (id <= 1) { /* 1: made, identity unknown (record_ring.c) */
    ncs_out_put(o, "null");
    return;
  }
  ncs_out_put(o, "\"");
  ncs_out_hex(o, id, 16);
  ncs_out_put(o, "\"");
}

/* A pointer as an id: its keyed hash, the same for one pointer throughout a process, and
 * telling nothing of the address space ("c-" communicators, "s-" streams). */
static void put_pointer(ncs_out *o, const rec_state *r, const char *key, const char *prefix,
                        uintptr_t value) {
  ncs_out_put(o, ",\"");
  ncs_out_put(o, key);
  ncs_out_put(o, "\":\"");
  ncs_out_put(o, prefix);
  ncs_out_hex(o, ncs_rec_hash(r, value), 16);
  ncs_out_put(o, "\"");
}

static void put_result(ncs_out *o, int result) {
  if (result == NCCLSHIM_REC_NO_RESULT) return;
  if (result == NCCLSHIM_REC_PENDING) {
    ncs_out_put(o, ",\"result\":null,\"state\":\"pending\"");
    return;
  }
  put_field(o, "result", result);
  ncs_out_put(o, ",\"result_name\":");
  put_string(o, ncclshim_nccl_result_name(result));
  ncs_out_put(o, ",\"state\":\"returned\"");
}

static void put_call(ncs_out *o, const rec_state *r, uint64_t index, const rec_entry *e,
                     int result) {
  ncs_out_put(o, "{\"kind\":\"call\",\"index\":");
  ncs_out_u64(o, index);
  ncs_out_put(o, ",\"function\":");
  put_string(o, ncclshim_nccl_function_name(e->fn));
  if (e->comm != 0) put_pointer(o, r, "comm", "c-", e->comm);
  if (e->comm != 0) put_comm_id(o, e->comm_id);
  put_field(o, "rank", e->rank);
  if (e->seq != 0) {
    ncs_out_put(o, ",\"seq\":");
    ncs_out_u64(o, e->seq);
  }
  if (e->coll != 0) {
    ncs_out_put(o, ",\"coll\":");
    ncs_out_u64(o, e->coll);
  }
  if (e->has_count) {
    ncs_out_put(o, ",\"count\":");
    ncs_out_u64(o, e->count);
  }
  put_named(o, "datatype", e->datatype, ncclshim_nccl_type_name((ncclDataType_t)e->datatype));
  put_named(o, "op", e->op, e->op >= 0 && e->op < ncclNumOps ? op_names[e->op] : "custom");
  put_field(o, "root", e->root);
  put_field(o, "peer", e->peer);
  if (e->seq != 0) put_pointer(o, r, "stream", "s-", e->stream);
  if (e->has_config) {
    ncs_out_put(o, ",\"alg\":");
    put_string(o, e->alg);
    ncs_out_put(o, ",\"profiler_tag\":");
    ncs_out_u64(o, e->profiler_tag);
  }
  if (e->captured) ncs_out_put(o, ",\"captured\":true");
  put_field(o, "thread", e->thread);
  ncs_out_put(o, ",\"start_ns\":");
  ncs_out_u64(o, e->start_ns);
  put_result(o, result);
  ncs_out_put(o, "}\n");
}

static void put_comm(ncs_out *o, const rec_state *r, const ncs_rec_comm *c) {
  ncs_out_put(o, "{\"kind\":\"comm\"");
  put_pointer(o, r, "comm", "c-", atomic_load(&c->shown));
  put_comm_id(o, atomic_load(&c->id));
  put_field(o, "rank", atomic_load(&c->rank));
  put_field(o, "nranks", atomic_load(&c->nranks));
  ncs_out_put(o, ",\"last_seq\":");
  ncs_out_u64(o, atomic_load(&c->ops));
  ncs_out_put(o, ",\"last_coll\":");
  ncs_out_u64(o, atomic_load(&c->colls));
  int by = atomic_load(&c->created_by);
  if (by >= 0) {
    ncs_out_put(o, ",\"created_by\":");
    put_string(o, ncclshim_nccl_function_name(by));
  }
  by = atomic_load(&c->ended_by);
  if (by >= 0) {
    ncs_out_put(o, ",\"ended_by\":");
    put_string(o, ncclshim_nccl_function_name(by));
  }
  put_field(o, "async_error", atomic_load(&c->async_error));
  ncs_out_put(o, "}\n");
}

/* A consistent copy of the call at ring index i, with its result; 0 when the slot holds
 * another call now, or is being rewritten. */
static int copy_entry(rec_state *r, uint64_t i, rec_entry *copy, int *result) {
  rec_entry *e = &r->entries[i & r->mask];
  uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
  memcpy((char *)copy + offsetof(rec_entry, fn), (char *)e + offsetof(rec_entry, fn),
         sizeof(*copy) - offsetof(rec_entry, fn));
  *result = atomic_load_explicit(&e->result, memory_order_relaxed);
  /* The copy must be done before the tag is read again: a release RMW (adding nothing)
   * orders it, where a fence would too but ThreadSanitizer does not model fences. Dumps
   * are rare, so the write to the slot's line costs nothing that matters. */
  return tag == i + 1 && atomic_fetch_add_explicit(&e->tag, 0, memory_order_acq_rel) == tag;
}

/* Who writes a dump. The recorder's own process writes through the state; a child that the
 * fork handler did not reach (a vfork child, which shares its parent's memory until it
 * execs; a fork in audit mode before the first recorded call) gets an identity computed
 * here, never stored: nothing of the parent's recorder changes. */
typedef struct writer {
  int child;
  uint64_t process_id, parent_process_id, first;
  unsigned generation;
  int rank;
  uint64_t names;        /* the child's temporary names drawn (the parent's count is r's) */
  uint64_t *name_suffix; /* r's, or the child's own below */
  uint64_t child_suffix;
} writer;

static void writer_of(rec_state *r, writer *w, int child) {
  if (!child) {
    *w = (writer){.process_id = r->process_id,
                  .parent_process_id = r->parent_process_id,
                  .first = atomic_load(&r->first),
                  .generation = atomic_load(&r->generation),
                  .rank = atomic_load(&r->process_rank),
                  .name_suffix = &r->name_suffix};
    return;
  }
  /* The same id for every dump of that child: its pid and start time under the key. */
  *w = (writer){.child = 1,
                .process_id = ncs_rec_child_id(r),
                .parent_process_id = r->process_id,
                .first = atomic_load(&r->next),                /* none of the parent's calls */
                .generation = atomic_load(&r->generation) + 1, /* none of its communicators */
                .rank = NCCLSHIM_REC_NONE};
  w->name_suffix = &w->child_suffix;
}

/* Every communicator alive, and the last ones to end (record_state.h). */
static void put_comms(ncs_out *o, rec_state *r, const writer *w) {
  for (const ncs_rec_comm *c = atomic_load_explicit(&r->all, memory_order_acquire); c != NULL;
       c = c->all_next)
    if (atomic_load(&c->id) != 0 && atomic_load(&c->generation) == w->generation) put_comm(o, r, c);
}

/* The oldest call still in the ring first; a slot being rewritten is left out. */
static uint64_t put_calls(ncs_out *o, rec_state *r, const writer *w) {
  uint64_t end = atomic_load(&r->next), written = 0;
  uint64_t begin = end > r->capacity ? end - r->capacity : 0;
  if (begin < w->first) begin = w->first;
  for (uint64_t i = begin; i < end; i++) {
    rec_entry copy;
    int result;
    if (!copy_entry(r, i, &copy, &result)) continue;
    put_call(o, r, i, &copy, result);
    written++;
  }
  return written;
}

/* What a dump is for: its reason, the function and value that detail it, and for a hang the
 * ring index (plus one) of the call that did not complete. */
typedef struct trigger {
  const char *why;
  int fn, value;
  uint64_t stuck, stuck_calls; /* the first stuck call, and how many share its event */
} trigger;

/* The hang's evidence: in the hang dump, and kept in every later dump of the process. */
static void put_hang(ncs_out *o, const rec_hang_seen *h, int is_hang) {
  if (h->stuck == 0) return;
  if (!is_hang) put_field(o, "hang_ms", h->hang_ms); /* the hang dump's own value says it */
  ncs_out_put(o, ",\"stuck_call\":");
  ncs_out_u64(o, h->stuck - 1);
  if (h->stuck_calls > 1) {
    ncs_out_put(o, ",\"stuck_calls\":");
    ncs_out_u64(o, h->stuck_calls);
  }
  ncs_out_put(o, ",\"stuck_function\":");
  put_string(o, ncclshim_nccl_function_name(h->fn));
  if (h->comm_id > 1) {
    ncs_out_put(o, ",\"stuck_comm_id\":\"");
    ncs_out_hex(o, h->comm_id, 16);
    ncs_out_put(o, "\"");
  }
  if (h->seq != 0) {
    ncs_out_put(o, ",\"stuck_seq\":");
    ncs_out_u64(o, h->seq);
  }
  put_field(o, "stuck_rank", h->rank);
}

static void put_header(ncs_out *o, rec_state *r, const writer *w, const trigger *t,
                       const rec_hang_seen *hang) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  ncs_out_put(o, "{\"kind\":\"header\",\"format\":\"ncclshim-record/2\",\"host\":");
  put_string(o, r->host);
  ncs_out_put(o, ",\"pid\":");
  ncs_out_u64(o, (uint64_t)getpid());
  ncs_out_put(o, ",\"process\":\"");
  ncs_out_hex(o, w->process_id, 16);
  ncs_out_put(o, "\"");
  if (w->parent_process_id != 0) {
    ncs_out_put(o, ",\"forked\":true,\"parent_process\":\"");
    ncs_out_hex(o, w->parent_process_id, 16);
    ncs_out_put(o, "\"");
  }
  ncs_out_put(o, ",\"boot_id\":");
  put_string(o, r->boot_id);
  put_field(o, "rank", w->rank);
  ncs_out_put(o, ",\"reason\":");
  put_string(o, t->why);
  if (t->fn >= 0) {
    ncs_out_put(o, ",\"function\":");
    put_string(o, ncclshim_nccl_function_name(t->fn));
  }
  put_field(o,
            strcmp(t->why, "signal") == 0 ? "signal"
            : t->stuck != 0               ? "hang_ms"
                                          : "result",
            t->value);
  put_hang(o, hang, t->stuck != 0);
  put_field(o, "nccl_version", atomic_load(&r->nccl_version));
  ncs_out_put(o, ",\"capacity\":");
  ncs_out_u64(o, r->capacity);
  ncs_out_put(o, ",\"calls\":");
  ncs_out_u64(o, atomic_load(&r->next) - w->first);
  ncs_out_put(o, ",\"suppressed_dumps\":");
  ncs_out_u64(o, w->child ? 0 : atomic_exchange(&r->suppressed, 0));
  ncs_out_put(o, ",\"time_ns\":");
  ncs_out_u64(o, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
  ncs_out_put(o, "}\n");
}

/* A hang dump's trigger, noted for the later dumps: the stuck call's communicator, sequence
 * number and rank read from the ring while it still holds the call. */
static void note_hang(rec_state *r, const trigger *t, rec_hang_seen *h) {
  *h = (rec_hang_seen){.stuck = t->stuck,
                       .stuck_calls = t->stuck_calls,
                       .fn = t->fn,
                       .hang_ms = t->value,
                       .rank = NCCLSHIM_REC_NONE};
  rec_entry copy;
  int result;
  if (copy_entry(r, t->stuck - 1, &copy, &result)) {
    h->seq = copy.seq;
    h->comm_id = copy.comm_id;
    h->rank = copy.rank;
  }
}

/* ncclshim-record-HOST-PID-rankR-PROCESS.jsonl ("-norank" before any communicator), in the
 * dump directory; PROCESS is the first 8 hex digits of the process id. Once that name could
 * not be taken, -SUFFIX (16 random hex digits) before ".jsonl". */
static void file_name(ncs_out *o, const rec_state *r, const writer *w) {
  o->used = 0;
  ncs_out_put(o, "ncclshim-record-");
  ncs_out_put(o, r->host);
  ncs_out_put(o, "-");
  ncs_out_u64(o, (uint64_t)getpid());
  if (w->rank == NCCLSHIM_REC_NONE) {
    ncs_out_put(o, "-norank-");
  } else {
    ncs_out_put(o, "-rank");
    ncs_out_int(o, w->rank);
    ncs_out_put(o, "-");
  }
  ncs_out_hex(o, w->process_id >> 32, 8);
  if (*w->name_suffix != 0) {
    ncs_out_put(o, "-");
    ncs_out_hex(o, *w->name_suffix, 16);
  }
  ncs_out_put(o, ".jsonl");
  ncs_out_end(o);
}

/* .ncclshim-record-XXXXXXXXXXXXXXXX.tmp: not guessable by another user (keyed hash of a
 * counter), and not matched by the compare command's pattern. */
static uint64_t next_name(rec_state *r, writer *w) {
  return w->child ? w->names++ : atomic_fetch_add(&r->names, 1);
}

static void temp_name(ncs_out *o, rec_state *r, writer *w) {
  o->used = 0;
  ncs_out_put(o, ".ncclshim-record-");
  ncs_out_hex(o, ncs_rec_hash(r, next_name(r, w) ^ ((uint64_t)getpid() << 40)), 16);
  ncs_out_put(o, ".tmp");
  ncs_out_end(o);
}

/* The directory's descriptor still names the directory opened at start (a program that
 * closes every descriptor may have closed it, and the number may name something else now). */
static int same_dir(const rec_state *r) {
  struct stat st;
  return fstat(r->dir_fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == r->dir_dev &&
         st.st_ino == r->dir_ino;
}

/* The temporary file, created new (never an existing file, link or FIFO), not blocking. */
static int create_temp(rec_state *r, writer *w, ncs_out *temp) {
  for (int attempt = 0; attempt < 8; attempt++) {
    temp_name(temp, r, w);
    int fd = openat(r->dir_fd, temp->buf,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return fd;
      close(fd);
      errno = EEXIST;
      return -1;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

/* The temporary file renamed to the dump's name. A name that cannot be taken because
 * something else holds it (another user's file planted in a sticky directory, a directory)
 * gives way to one with a random suffix, kept for the later dumps; `path` is the name used. */
static int rename_dump(rec_state *r, writer *w, const ncs_out *temp, ncs_out *path) {
  for (int attempt = 0; attempt < 4; attempt++) {
    if (renameat(r->dir_fd, temp->buf, r->dir_fd, path->buf) == 0) return 1;
    if (errno != EEXIST && errno != EISDIR && errno != EPERM && errno != EACCES &&
        errno != ENOTEMPTY && errno != EBUSY)
      return 0;
    *w->name_suffix = ncs_rec_hash(r, next_name(r, w) ^ ((uint64_t)getpid() << 20)) | 1;
    file_name(path, r, w);
  }
  return 0;
}

/* "wrote DIR/NAME": DIR is where the descriptor is now (the directory may have been renamed
 * since the start), written in pieces, so that no length cuts it. */
static void say_written(const rec_state *r, const ncs_out *path, const char *note) {
  char now[PATH_MAX + 1], link[32];
  ncs_out fd_link = {.fd = -1};
  ncs_out_put(&fd_link, "/proc/self/fd/");
  ncs_out_u64(&fd_link, (uint64_t)r->dir_fd);
  ncs_out_end(&fd_link);
  memcpy(link, fd_link.buf, sizeof(link) - 1);
  link[sizeof(link) - 1] = '\0';
  ssize_t n = readlink(link, now, sizeof(now) - 1);
  const char *dir = r->dir;
  if (n > 0 && now[0] == '/') {
    now[n] = '\0';
    dir = now;
  }
  ncs_out tail = {.fd = -1};
  ncs_out_put(&tail, "/");
  ncs_out_put(&tail, path->buf);
  ncs_out_put(&tail, note);
  ncs_out_end(&tail);
  ncs_rec_say("wrote ", dir, tail.buf, 0);
}

enum { WAIT_STEPS = 10000 }; /* of 1 ms: how long a dump waits for another one to finish */

/* One dump at a time. Signals are blocked while this thread writes one, so that no handler
 * interrupts it; a dump on another thread (a signal delivered there, abort(), the hang
 * thread) waits for this one to finish, then writes its own, so that neither is lost. */
static int take_turn(rec_state *r) {
  struct timespec step = {0, 1000 * 1000};
  for (int i = 0; i < WAIT_STEPS; i++) {
    if (!atomic_flag_test_and_set(&r->busy)) return 1;
    nanosleep(&step, NULL);
  }
  return 0;
}

/* Write the whole dump to a new temporary file, and rename it over the dump's name only when
 * every byte was written: a full disk leaves the previous dump as it was. */
static void dump(const trigger *t, const char *note) {
  rec_state *r = ncs_rec;
  if (r == NULL) return;
  int saved_errno = errno;
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  /* A child not reached by the fork handler has one thread, and takes no turn: the flag is
   * its parent's (a vfork child's), or a copy that another thread may have left set. */
  int child = getpid() != r->pid;
  if (!child && !take_turn(r)) {
    ncs_rec_say("no dump (", t->why, "): another dump did not finish within 10 s", 0);
    sigprocmask(SIG_SETMASK, &before, NULL);
    errno = saved_errno;
    return;
  }
  writer w;
  writer_of(r, &w, child);
  rec_hang_seen child_hang = {0};
  rec_hang_seen *hang = child ? &child_hang : &r->hang;
  if (t->stuck != 0) note_hang(r, t, hang);
  ncs_out path, temp;
  file_name(&path, r, &w);
  int fd = -1;
  if (!same_dir(r)) {
    ncs_rec_say("no dump: the descriptor of ", r->dir, " was closed or replaced by the program", 0);
  } else if ((fd = create_temp(r, &w, &temp)) < 0) {
    ncs_rec_say("cannot create a dump in ", r->dir, "", errno);
  } else {
    ncs_out o = {.fd = fd};
    put_header(&o, r, &w, t, hang);
    put_comms(&o, r, &w);
    put_calls(&o, r, &w);
    ncs_out_flush(&o);
    if (close(fd) != 0 && o.error == 0 && errno != EINTR) o.error = errno;
    if (o.error != 0) {
      unlinkat(r->dir_fd, temp.buf, 0);
      ncs_rec_say("cannot write a dump in ", r->dir, " (the previous dump is kept)", o.error);
    } else if (!rename_dump(r, &w, &temp, &path)) {
      int error = errno;
      unlinkat(r->dir_fd, temp.buf, 0);
      ncs_rec_say("cannot rename the dump to ", path.buf, "", error);
    } else {
      say_written(r, &path, note);
    }
  }
  if (!w.child) atomic_flag_clear(&r->busy);
  sigprocmask(SIG_SETMASK, &before, NULL);
  errno = saved_errno;
}

void ncs_rec_dump(const char *why, int fn, int value) {
  trigger t = {why, fn, value, 0, 0};
  dump(&t, why[0] == 'e' && why[1] == 'r' ? " (a call failed)" : "");
}

void ncs_rec_dump_hang(int fn, int hang_ms, uint64_t index, uint64_t calls, const char *note) {
  trigger t = {"hang", fn, hang_ms, index, calls};
  dump(&t, note);
}
