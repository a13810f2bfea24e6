// The watchdog's tracker on one GPU, through comm.h, run by tests/gpu/track/tracker.sh: one-rank
// NCCLSHIM_COMM_SPLIT_BLOCKING communicators on the NCCL that NCCLSHIM_NCCL_LIBRARY names,
// watched (interval INTERVAL_MS); all-reduces of COUNT floats, each followed by its record.
//   tracker_comm churn ROUNDS   a communicator watched with a DEADLINE_MS deadline; per round
//                               a new stream (cudaStreamCreate and cuStreamCreate in turn),
//                               BURST all-reduces recorded, the stream synchronised and
//                               destroyed at once (every 4th round then idle for a watchdog
//                               pass, the others making the next stream at once, which gets
//                               the same handle): no crash, every record OK, no failure, the
//                               communicator READY and nothing outstanding at the end. Row
//                               churn-watchdog.
//   tracker_comm hold           per kind of stream (tracker_common.cuh), a new communicator:
//                               BURST / 2 all-reduces recorded, a kernel that holds the stream
//                               (it gives up by itself after SPIN_LIMIT_MS), BURST / 2 more
//                               recorded behind it: the failure within DEADLINE_MS ..
//                               (DEADLINE_MS + INTERVAL_MS) * 1.1 of the first held one's
//                               enqueue, naming it (#5, alone or under one event with others);
//                               then the kernel is released and the communicator aborted.
//                               Rows hold-watchdog-KIND.
//   tracker_comm cost PAIRS     per kind of stream, on one communicator (deadline 60 s), call
//                               by call in turns: an all-reduce then a cuEventRecord alone on
//                               that stream, and an all-reduce then its ncclshim_comm_record,
//                               each call timed by itself (less the clock's own cost); the
//                               stream synchronised every SYNC_EVERY pairs. Rows
//                               KIND,event_record|record|record_minus_event_record|enqueue,ns
//                               (medians; the third is the median of the paired differences),
//                               then KIND,event_ring_idle|event_ring_queried,ns: an all-reduce
//                               then cuEventRecord on the next of RING events in turn (what a
//                               record pays for an event of its own), the events left alone or
//                               each queried by another thread every INTERVAL_MS (as the
//                               watchdog's look does): how much of the record's cost is the
//                               driver's, for distinct events another thread touches.
// The cases print cases.csv rows (case,verdict,detail; verdict ok or FAIL: why). Exit 0 when
// every verdict is ok, 1 otherwise, 77 without a GPU.
#include <atomic>
#include <thread>

#include "ncclshim/comm.h"
#include "tracker_common.cuh"

enum { DEADLINE_MS = 300, INTERVAL_MS = 10, COUNT = 1024, BURST = 8, SPIN_LIMIT_MS = 3000 };
enum { SYNC_EVERY = 128, WARM_PAIRS = 512, HELD_SEQ = BURST / 2 + 1, RING = 2048 };

static const ncclshim_nccl_table *T;
static const ncclshim_cuda_table *CU;
static float *sendbuf, *recvbuf;
static ncclshim_watchdog *dog;

// What the watchdog's callback saw (it runs on the watchdog's thread).
static std::atomic<int> failures;
static std::atomic<int64_t> failed_at_ns;
static char failed_message[1024];

static void on_failure(ncclshim_comm *, ncclshim_status, const char *message, void *) {
  if (failures.fetch_add(1) != 0) return;  // the first failure is the one looked at
  snprintf(failed_message, sizeof(failed_message), "%s", message);
  failed_at_ns.store(tracker_now_ns());  // publishes the message
}

static void reset_failure(void) {
  failures.store(0);
  failed_at_ns.store(0);
  failed_message[0] = '\0';
}

// A cases.csv row: the detail quoted, its quotes made single, the verdict free of commas.
static int bad_rows;
static void row(const char *name, const char *verdict, const char *detail) {
  char v[512], d[1024];
  snprintf(v, sizeof(v), "%s", verdict);
  snprintf(d, sizeof(d), "%s", detail);
  for (char *p = v; *p; p++)
    if (*p == ',') *p = ';';
  for (char *p = d; *p; p++)
    if (*p == '"') *p = '\'';
  if (strcmp(v, "ok") != 0) bad_rows++;
  printf("%s,%s,\"%s\"\n", name, v, d);
  fflush(stdout);
}

// Appends "text; " to a FAIL reason.
static void why_add(char *why, size_t size, const char *text) {
  size_t n = strlen(why);
  snprintf(why + n, size - n, "%s; ", text);
}

static void verdict_of(const char *why, char *out, size_t size) {
  if (why[0] == '\0')
    snprintf(out, size, "ok");
  else
    snprintf(out, size, "FAIL: %.*s", (int)strlen(why) - 2, why);
}

static int setup(void) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  if (ncclshim_init() != NCCLSHIM_OK) {
    fprintf(stderr, "tracker_comm: ncclshim_init: %s\n", ncclshim_last_error());
    return 1;
  }
  T = ncclshim_table();
  ncclshim_cuda *cuda = ncclshim_cuda_default();
  CU = ncclshim_cuda_functions(cuda);
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaFree(NULL);
  if (e == cudaSuccess) e = cudaMalloc((void **)&sendbuf, COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc((void **)&recvbuf, COUNT * sizeof(float));
  if (e == cudaSuccess) e = cudaMemset(sendbuf, 0, COUNT * sizeof(float));
  if (e == cudaSuccess) e = tracker_hold_init();
  if (e != cudaSuccess) {
    fprintf(stderr, "tracker_comm: CUDA setup: %s\n", cudaGetErrorString(e));
    return 1;
  }
  if (ncclshim_cuda_init(cuda) != NCCLSHIM_OK) {
    fprintf(stderr, "tracker_comm: ncclshim_cuda_init: %s\n", ncclshim_last_error());
    return 1;
  }
  ncclshim_watchdog_options wo = NCCLSHIM_WATCHDOG_OPTIONS_INIT;
  wo.interval_ms = INTERVAL_MS;
  wo.on_failure = on_failure;
  if (ncclshim_watchdog_start(&wo, &dog) != NCCLSHIM_OK) {
    fprintf(stderr, "tracker_comm: ncclshim_watchdog_start: %s\n", ncclshim_last_error());
    return 1;
  }
  return 0;
}

// A READY one-rank communicator watched with deadline_ms; NULL with the reason in `why`.
static ncclshim_comm *watched_comm(int deadline_ms, char *why, size_t size) {
  ncclUniqueId id;
  ncclshim_comm *comm = NULL;
  ncclshim_comm_options options = NCCLSHIM_COMM_OPTIONS_INIT;
  options.blocking = NCCLSHIM_COMM_SPLIT_BLOCKING;
  const char *step = "ncclGetUniqueId";
  if (T->ncclGetUniqueId(&id) == ncclSuccess &&
      (step = "ncclshim_comm_init", ncclshim_comm_init(NULL, 1, &id, 0, &options, &comm)) ==
          NCCLSHIM_OK &&
      (step = "ncclshim_comm_wait", ncclshim_comm_wait(comm, 60000)) == NCCLSHIM_OK &&
      (step = "ncclshim_comm_watch", ncclshim_comm_watch(comm, dog, deadline_ms)) == NCCLSHIM_OK)
    return comm;
  snprintf(why, size, "%s: %s", step, ncclshim_last_error());
  if (comm != NULL) {
    ncclshim_comm_abort(comm, 10000);
    ncclshim_comm_free(comm);
  }
  return NULL;
}

static ncclResult_t all_reduce(ncclshim_comm *comm, cudaStream_t s) {
  return T->ncclAllReduce(sendbuf, recvbuf, COUNT, ncclFloat32, ncclSum, ncclshim_comm_raw(comm),
                          s);
}

// An all-reduce and its record: OK, or the first status that is not (NCCL_ERROR for NCCL's).
static ncclshim_status recorded_all_reduce(ncclshim_comm *comm, cudaStream_t s) {
  if (all_reduce(comm, s) != ncclSuccess) return NCCLSHIM_NCCL_ERROR;
  return ncclshim_comm_record(comm, (CUstream)s, "ncclAllReduce", COUNT, ncclFloat32);
}

// Waits (at most 2 s) until the watchdog has seen every operation complete; the count left.
static uint64_t drained(ncclshim_comm *comm) {
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  int64_t start = tracker_now_ns();
  while (ncclshim_comm_watch_counts(comm, &c) == NCCLSHIM_OK && c.outstanding > 0 &&
         failures.load() == 0 && tracker_ms_since(start) < 2000)
    tracker_sleep_ms(1);
  return c.outstanding;
}

static void churn(int rounds) {
  char why[1024] = "", text[512], verdict[600], detail[1024];
  reset_failure();
  ncclshim_comm *comm = watched_comm(DEADLINE_MS, why, sizeof(why));
  if (comm == NULL) {
    row("churn-watchdog", "FAIL: no communicator", why);
    return;
  }
  int64_t start = tracker_now_ns();
  int reused = 0, r;
  cudaStream_t last = NULL;
  for (r = 0; r < rounds && why[0] == '\0'; r++) {
    cudaStream_t s = NULL;
    int by_driver = r % 2;
    int made = by_driver ? CU->cuStreamCreate((CUstream *)&s, NCCLSHIM_CU_STREAM_NON_BLOCKING)
                         : (int)cudaStreamCreate(&s);
    if (made != 0) {
      snprintf(text, sizeof(text), "round %d: %s failed: %d", r,
               by_driver ? "cuStreamCreate" : "cudaStreamCreate", made);
      why_add(why, sizeof(why), text);
      break;
    }
    reused += s == last;
    last = s;
    for (int i = 0; i < BURST; i++) {
      ncclshim_status st = recorded_all_reduce(comm, s);
      if (st != NCCLSHIM_OK) {
        snprintf(text, sizeof(text), "round %d op %d: %s: %s", r, i, ncclshim_status_name(st),
                 ncclshim_last_error());
        why_add(why, sizeof(why), text);
        break;
      }
    }
    cudaError_t synced = cudaStreamSynchronize(s);
    if (synced != cudaSuccess) {
      snprintf(text, sizeof(text), "round %d: cudaStreamSynchronize: %s", r,
               cudaGetErrorString(synced));
      why_add(why, sizeof(why), text);
    }
    if (by_driver)
      CU->cuStreamDestroy((CUstream)s);
    else
      cudaStreamDestroy(s);
    if (r % 4 == 3) tracker_sleep_ms(INTERVAL_MS + 5);
  }
  uint64_t left = drained(comm);
  double ms = tracker_ms_since(start);
  ncclshim_watch_counts c = NCCLSHIM_WATCH_COUNTS_INIT;
  ncclshim_comm_watch_counts(comm, &c);
  if (failures.load() != 0) {
    snprintf(text, sizeof(text), "a false report: %s", failed_message);
    why_add(why, sizeof(why), text);
  }
  if (ncclshim_comm_failure(comm)[0] != '\0')
    why_add(why, sizeof(why), ncclshim_comm_failure(comm));
  if (ncclshim_comm_state_of(comm) != NCCLSHIM_COMM_READY)
    why_add(why, sizeof(why), ncclshim_comm_state_name(ncclshim_comm_state_of(comm)));
  if (left != 0) {
    snprintf(text, sizeof(text), "%llu operations never seen complete", (unsigned long long)left);
    why_add(why, sizeof(why), text);
  }
  verdict_of(why, verdict, sizeof(verdict));
  snprintf(detail, sizeof(detail),
           "%d rounds of %d recorded all-reduces in %.0f ms; the next stream had the destroyed "
           "one's handle in %d; recorded %llu; events %llu",
           r, BURST, ms, reused, (unsigned long long)c.recorded, (unsigned long long)c.events);
  row("churn-watchdog", verdict, detail);
  ncclshim_comm_destroy(comm, 10000);
  ncclshim_comm_free(comm);
}

// Whether the message names the first held operation: "ncclAllReduce #5", or #N<=5 under one
// event with the K after it ("or one of the K after it"), N+K>=5.
static int names_held(const char *message) {
  const char *p = strstr(message, "ncclAllReduce #");
  if (p == NULL) return 0;
  int first = atoi(p + strlen("ncclAllReduce #"));
  if (first == HELD_SEQ) return 1;
  const char *after = strstr(p, "or one of the ");
  return first >= 1 && first < HELD_SEQ && after != NULL &&
         first + atoi(after + strlen("or one of the ")) >= HELD_SEQ;
}

static void hold_one(int kind) {
  char name[64], why[1024] = "", text[512], verdict[600], detail[1024];
  snprintf(name, sizeof(name), "hold-watchdog-%s", tracker_kind_names[kind]);
  reset_failure();
  ncclshim_comm *comm = watched_comm(DEADLINE_MS, why, sizeof(why));
  cudaStream_t s = NULL;
  if (comm == NULL || tracker_stream(kind, &s) != cudaSuccess) {
    row(name, "FAIL: no communicator or stream", why);
    if (comm != NULL) ncclshim_comm_free(comm);
    return;
  }
  int bad = 0;
  for (int i = 0; i < BURST / 2; i++) bad += recorded_all_reduce(comm, s) != NCCLSHIM_OK;
  cudaError_t held = tracker_hold(s, SPIN_LIMIT_MS);
  int64_t t0 = tracker_now_ns();
  for (int i = 0; i < BURST / 2; i++) bad += recorded_all_reduce(comm, s) != NCCLSHIM_OK;
  while (failed_at_ns.load() == 0 && tracker_ms_since(t0) < 2 * DEADLINE_MS + 1000)
    tracker_sleep_ms(1);
  int64_t at = failed_at_ns.load();
  tracker_release();
  double ms = at ? (double)(at - t0) / 1e6 : -1, limit = (DEADLINE_MS + INTERVAL_MS) * 1.1;
  if (held != cudaSuccess) why_add(why, sizeof(why), cudaGetErrorString(held));
  if (bad) {
    snprintf(text, sizeof(text), "%d records not OK before the deadline", bad);
    why_add(why, sizeof(why), text);
  }
  if (at == 0) why_add(why, sizeof(why), "the held stream was not detected");
  if (at != 0 && (ms < DEADLINE_MS - 2 || ms > limit)) {
    snprintf(text, sizeof(text), "detected after %.1f ms (%d .. %.0f wanted)", ms, DEADLINE_MS,
             limit);
    why_add(why, sizeof(why), text);
  }
  if (at != 0 && !names_held(failed_message)) {
    snprintf(text, sizeof(text), "the message does not name ncclAllReduce #%d", HELD_SEQ);
    why_add(why, sizeof(why), text);
  }
  if (failures.load() > 1) why_add(why, sizeof(why), "more than one failure");
  ncclshim_comm_abort(comm, 10000);
  cudaError_t synced = cudaStreamSynchronize(s);
  if (synced != cudaSuccess) why_add(why, sizeof(why), cudaGetErrorString(synced));
  if (tracker_gave_up()) why_add(why, sizeof(why), "the kernel hit its own limit");
  verdict_of(why, verdict, sizeof(verdict));
  snprintf(detail, sizeof(detail), "detected after %.1f ms (limit %.0f): %s", ms, limit,
           failed_message);
  row(name, verdict, detail);
  ncclshim_comm_free(comm);
  tracker_stream_done(kind, s);
}

// Medians of one kind of stream, printed as cost rows.
// The median of cuEventRecord on RING distinct events in turn, each after an all-reduce;
// `queried`: another thread queries every event each INTERVAL_MS meanwhile.
static double ring_median(ncclshim_comm *comm, cudaStream_t s, std::vector<CUevent> &ring,
                          int pairs, int queried, double clock, int *failed) {
  std::atomic<bool> done(false);
  CUcontext ctx = NULL;
  *failed |= CU->cuCtxGetCurrent(&ctx) != 0;
  std::thread looker([&] {
    if (queried) CU->cuCtxSetCurrent(ctx);
    while (queried && !done.load()) {
      for (CUevent e : ring) CU->cuEventQuery(e);
      usleep(INTERVAL_MS * 1000);
    }
  });
  std::vector<double> ns;
  for (int i = -WARM_PAIRS; i < pairs && !*failed; i++) {
    *failed |= all_reduce(comm, s) != ncclSuccess;
    int64_t t0 = tracker_now_ns();
    *failed |= CU->cuEventRecord(ring[(size_t)(i + WARM_PAIRS) % RING], (CUstream)s) != 0;
    int64_t t1 = tracker_now_ns();
    if (i >= 0) ns.push_back((double)(t1 - t0) - clock);
    if ((i + WARM_PAIRS) % SYNC_EVERY == SYNC_EVERY - 1) *failed |= cudaStreamSynchronize(s) != 0;
  }
  done.store(true);
  looker.join();
  *failed |= cudaStreamSynchronize(s) != cudaSuccess;
  return ns.empty() ? 0 : tracker_median(ns);
}

static int cost_kind(ncclshim_comm *comm, int kind, int pairs, CUevent ev, double clock) {
  cudaStream_t s = NULL;
  if (tracker_stream(kind, &s) != cudaSuccess) return 1;
  std::vector<double> event_record, record, diff, enqueue;
  ncclshim_watch_counts before = NCCLSHIM_WATCH_COUNTS_INIT, after = before;
  ncclshim_comm_watch_counts(comm, &before);
  int failed = 0;
  for (int i = -WARM_PAIRS; i < pairs && !failed; i++) {
    double ns[2];
    for (int turn = 0; turn < 2; turn++) {
      int recorded = (turn + i) % 2 != 0;
      int64_t a = tracker_now_ns();
      failed |= all_reduce(comm, s) != ncclSuccess;
      int64_t t0 = tracker_now_ns();
      if (recorded)
        failed |= ncclshim_comm_record(comm, (CUstream)s, "ncclAllReduce", COUNT, ncclFloat32) !=
                  NCCLSHIM_OK;
      else
        failed |= CU->cuEventRecord(ev, (CUstream)s) != 0;
      int64_t t1 = tracker_now_ns();
      ns[recorded] = (double)(t1 - t0) - clock;
      if (!recorded && i >= 0) enqueue.push_back((double)(t0 - a) - clock);
    }
    if (i >= 0) {
      event_record.push_back(ns[0]);
      record.push_back(ns[1]);
      diff.push_back(ns[1] - ns[0]);
    }
    if ((i + WARM_PAIRS) % SYNC_EVERY == SYNC_EVERY - 1) failed |= cudaStreamSynchronize(s) != 0;
  }
  failed |= cudaStreamSynchronize(s) != cudaSuccess;
  ncclshim_comm_watch_counts(comm, &after);
  const char *k = tracker_kind_names[kind];
  if (failed) {
    fprintf(stderr, "tracker_comm cost %s: a call failed: %s\n", k, ncclshim_last_error());
  } else {
    printf("%s,event_record,%.1f\n", k, tracker_median(event_record));
    printf("%s,record,%.1f\n", k, tracker_median(record));
    printf("%s,record_minus_event_record,%.1f\n", k, tracker_median(diff));
    printf("%s,enqueue,%.1f\n", k, tracker_median(enqueue));
    uint64_t records = after.recorded - before.recorded;
    fprintf(stderr, "%s: %llu records, %llu events\n", k, (unsigned long long)records,
            (unsigned long long)(after.events - before.events));
    std::vector<CUevent> ring(RING);
    for (CUevent &e : ring) failed |= CU->cuEventCreate(&e, NCCLSHIM_CU_EVENT_DISABLE_TIMING) != 0;
    for (int queried = 0; queried < 2 && !failed; queried++) {
      double median = ring_median(comm, s, ring, pairs, queried, clock, &failed);
      if (!failed) printf("%s,event_ring_%s,%.1f\n", k, queried ? "queried" : "idle", median);
    }
    for (CUevent e : ring)
      if (e != NULL) CU->cuEventDestroy(e);
  }
  fflush(stdout);
  tracker_stream_done(kind, s);
  return failed;
}

static int cost(int pairs) {
  char why[512] = "";
  ncclshim_comm *comm = watched_comm(60000, why, sizeof(why));
  if (comm == NULL) {
    fprintf(stderr, "tracker_comm cost: %s\n", why);
    return 1;
  }
  CUevent ev = NULL;
  if (CU->cuEventCreate(&ev, NCCLSHIM_CU_EVENT_DISABLE_TIMING) != 0) return 1;
  double clock = tracker_clock_ns();
  int failed = 0;
  for (int kind = 0; kind < TRACKER_KINDS; kind++)
    failed |= cost_kind(comm, kind, pairs, ev, clock);
  printf("any,clock,%.1f\n", clock);
  CU->cuEventDestroy(ev);
  ncclshim_comm_destroy(comm, 10000);
  ncclshim_comm_free(comm);
  return failed;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int n = argc == 3 ? atoi(argv[2]) : 0;
  const char *mode = argc >= 2 ? argv[1] : "";
  if (!((strcmp(mode, "churn") == 0 && n > 0) || (strcmp(mode, "hold") == 0 && argc == 2) ||
        (strcmp(mode, "cost") == 0 && n > 0))) {
    fprintf(stderr, "usage: %s churn ROUNDS | hold | cost PAIRS\n", argv[0]);
    return 2;
  }
  int status = setup();
  if (status != 0) return status;
  if (strcmp(mode, "churn") == 0) {
    churn(n);
  } else if (strcmp(mode, "hold") == 0) {
    for (int kind = 0; kind < TRACKER_KINDS; kind++) hold_one(kind);
  } else {
    bad_rows = cost(n);
  }
  if (ncclshim_watchdog_stop(dog) != NCCLSHIM_OK) bad_rows++;
  return bad_rows ? 1 : 0;
}
