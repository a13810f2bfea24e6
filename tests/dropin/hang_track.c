/* The hang dump on the tracker of GPU progress, on the strict fake driver (tests/fakes: a call
 * naming a destroyed stream aborts, freed handles are reused, an event recorded on another
 * context's stream is refused). A program linked with the drop-in, as one built against
 * nccl.h; each scenario checks itself and exits 0 when all held:
 *   hang_track destroyloop   200 rounds of a new stream, 8 all-reduces, synchronize,
 *                            destroy: nothing of ours names a destroyed stream, no dump
 *   hang_track manyops       4500 all-reduces outstanding on the legacy and per-thread
 *                            streams (more than any fixed queue held), a hang on a
 *                            created stream, 1000 more on the busy ones: the dump names it
 *   hang_track twocontexts   streams of two devices from one thread: a hang on device 1's
 *                            is dumped
 *   hang_track sharedstream  one stream, two communicators, the first one's all-reduce
 *                            hung: the line names it alone, with its own sequence number
 *   hang_track failingrecord cuEventRecord fails, then a cuEventQuery: each said on stderr,
 *                            naming the operation; a later hang is still dumped
 *   hang_track inprogress    a non-blocking communicator's all-reduce answers ncclInProgress,
 *                            its work reaches the stream later (held there): its event is
 *                            recorded at the ncclCommGetAsyncError that says it launched,
 *                            and the hang is dumped; one dropped by ncclCommDestroy is not
 *   hang_track simulated     a group ended by ncclGroupSimulateEnd launches nothing: the
 *                            next all-reduce, alone, is watched (hung, it is dumped)
 * It runs itself again with the recorder's settings (read when the drop-in loads): a
 * directory of its own for the dump, NCCLSHIM_RECORD_HANG_MS, stderr kept in a file there
 * and read back. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakes/fake_cuda.h"
#include "has_dump.h"
#include "support.h"
#include "ncclshim/ncclshim.h" /* stands in for nccl.h */

static fake_cuda_api fake;
static void (*nccl_inject)(const char *function, int result, int times);
static int failures;

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      printf("hang_track: line %d: %s does not hold\n", __LINE__, #condition); \
      failures++;                                                              \
    }                                                                          \
  } while (0)

typedef ncclshim_cu_result (*stream_fn)(CUstream);
typedef ncclshim_cu_result (*create_fn)(CUstream *, unsigned);
typedef ncclshim_cu_result (*set_ctx_fn)(CUcontext);
static create_fn stream_create;
static stream_fn stream_destroy, stream_synchronize;
static set_ctx_fn ctx_set_current;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&t, NULL);
}

/* A communicator of the fake NCCL (2 ranks, rank 0), through the drop-in; the fake has one,
 * and one child split from it. */
static ncclComm_t new_comm(void) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  CHECK(ncclCommInitRank(&comm, 2, id, 0) == ncclSuccess);
  return comm;
}

static ncclComm_t split_of(ncclComm_t parent) {
  ncclComm_t child = NULL;
  CHECK(ncclCommSplit(parent, 0, 0, &child, NULL) == ncclSuccess);
  CHECK(child != NULL && child != parent);
  return child;
}

static void all_reduce(ncclComm_t comm, CUstream stream, size_t count) {
  CHECK(ncclAllReduce(NULL, NULL, count, ncclFloat32, ncclSum, comm, (cudaStream_t)stream) ==
        ncclSuccess);
}

static int wait_for_dump(const char *dir, int ms) {
  for (int i = 0; i < ms; i += 5, sleep_ms(5))
    if (has_dump(dir)) return 1;
  return has_dump(dir);
}

static CUstream new_stream(void) {
  CUstream s = NULL;
  CHECK(stream_create(&s, 0) == 0);
  return s;
}

static void destroyloop(const char *dir) {
  ncclComm_t comm = new_comm();
  CUstream first = NULL;
  int reused = 0;
  for (int round = 0; round < 200; round++) {
    CUstream s = new_stream();
    if (round == 0) first = s;
    reused += s == first;
    fake.set_stream_delay(s, round % 4); /* some still pending at the last all-reduce */
    for (int i = 0; i < 8; i++) all_reduce(comm, s, 64);
    CHECK(stream_synchronize(s) == 0);
    CHECK(stream_destroy(s) == 0);
    if (round % 10 == 0) sleep_ms(15); /* a few looks of the checking thread in between */
  }
  CHECK(reused > 100);
  CHECK(fake.count("cuEventRecord") == 1600);
  sleep_ms(300);
  CHECK(!has_dump(dir));
}

static void manyops(const char *dir) {
  ncclComm_t comm = new_comm();
  CUstream busy[2] = {NULL, NCCLSHIM_CU_STREAM_PER_THREAD};
  for (int i = 0; i < 2; i++) fake.set_stream_delay(busy[i], 150);
  for (int i = 0; i < 4500; i++) all_reduce(comm, busy[i % 2], 16);
  CUstream held = new_stream();
  fake.set_stream_answer(held, 600, 0);
  all_reduce(comm, held, 99); /* #4501 */
  for (int i = 0; i < 1000; i++) all_reduce(comm, busy[i % 2], 16);
  CHECK(wait_for_dump(dir, 10000));
  CHECK(fake.count("cuEventRecord") == 5501);
  fake.release_stream(held);
  stream_destroy(held);
}

static void twocontexts(const char *dir) {
  ncclComm_t comm0 = new_comm(), comm1 = split_of(comm0);
  CUstream s0 = fake.new_stream(0), s1 = fake.new_stream(1);
  for (int i = 0; i < 4; i++) all_reduce(i % 2 ? comm1 : comm0, i % 2 ? s1 : s0, 8);
  CHECK(ctx_set_current(fake.context(1)) == 0); /* device 1's legacy stream */
  all_reduce(comm1, NULL, 8);
  CHECK(ctx_set_current(fake.context(0)) == 0);
  sleep_ms(100);
  CHECK(!has_dump(dir));
  fake.set_stream_answer(s1, 600, 0);
  all_reduce(comm1, s1, 77); /* comm1's #4 */
  all_reduce(comm0, s0, 8);
  CHECK(wait_for_dump(dir, 10000));
  CHECK(fake.count("cuEventRecord") == 7);
  fake.release_stream(s1);
  stream_destroy(s0);
  stream_destroy(s1);
}

static void sharedstream(const char *dir) {
  ncclComm_t a = new_comm(), b = split_of(a);
  CUstream s = new_stream();
  all_reduce(b, s, 22); /* b's #1 completes */
  fake.set_stream_answer(s, 600, 0);
  all_reduce(a, s, 11); /* a's #1 hangs */
  all_reduce(b, s, 23); /* b's #2, behind it */
  all_reduce(b, s, 24);
  CHECK(wait_for_dump(dir, 10000));
  fake.release_stream(s);
  stream_destroy(s);
}

static void failingrecord(const char *dir) {
  ncclComm_t comm = new_comm();
  CUstream s = new_stream();
  all_reduce(comm, s, 1);
  fake.inject("cuEventRecord", 1, s, 999, 2);
  all_reduce(comm, s, 2); /* #2 and #3: not watched, said once */
  all_reduce(comm, s, 3);
  fake.inject("cuEventQuery", 0, NULL, 999, 1); /* the checking thread's next query */
  all_reduce(comm, s, 4);
  sleep_ms(100);
  CHECK(fake.count("cuEventQuery") > 1);
  fake.set_stream_answer(s, 600, 0);
  all_reduce(comm, s, 5); /* #5 is watched, and hangs */
  CHECK(wait_for_dump(dir, 10000));
  fake.release_stream(s);
  stream_destroy(s);
}

static void inprogress(const char *dir) {
  ncclComm_t comm = new_comm(), other = split_of(comm);
  CUstream s = new_stream(), t = new_stream();
  nccl_inject("ncclAllReduce", ncclInProgress, 1);
  CHECK(ncclAllReduce(NULL, NULL, 8, ncclFloat32, ncclSum, other, (cudaStream_t)t) ==
        ncclInProgress); /* never launched: its communicator is destroyed first */
  CHECK(ncclCommDestroy(other) == ncclSuccess);
  all_reduce(comm, s, 8); /* #1, launched in the call */
  /* A look has queried #1's event: #2 is not under it (a look closes what it lists). */
  for (int i = 0; i < 2000 && fake.count("cuEventQuery") == 0; i++) sleep_ms(5);
  nccl_inject("ncclAllReduce", ncclInProgress, 1);
  CHECK(ncclAllReduce(NULL, NULL, 9, ncclFloat32, ncclSum, comm, (cudaStream_t)s) ==
        ncclInProgress);                   /* #2 */
  CHECK(fake.count("cuEventRecord") == 1); /* #2's waits for NCCL's launch */
  fake.set_stream_answer(s, 600, 0);       /* NCCL's thread launches #2 there, and it hangs */
  ncclResult_t state = ncclInProgress;
  CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess);
  CHECK(fake.count("cuEventRecord") == 2);
  CHECK(wait_for_dump(dir, 10000));
  fake.release_stream(s);
  stream_destroy(s);
  stream_destroy(t);
}

static void simulated(const char *dir) {
  ncclComm_t comm = new_comm();
  CUstream s = new_stream();
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  CHECK(ncclGroupStart() == ncclSuccess);
  all_reduce(comm, s, 8); /* #1: only estimated */
  CHECK(ncclGroupSimulateEnd(&info) == ncclSuccess);
  CHECK(fake.count("cuEventRecord") == 0);
  fake.set_stream_answer(s, 600, 0);
  all_reduce(comm, s, 9); /* #2, outside any group: watched at once, and hung */
  CHECK(fake.count("cuEventRecord") == 1);
  CHECK(wait_for_dump(dir, 10000));
  fake.release_stream(s);
  stream_destroy(s);
}

/* What stderr held: lines that must be there (and how often), and text that must not. The
 * hang thread says its line once the dump is in place, a moment after the scenario saw the
 * dump: where a hang line is due, it is waited for (10 s at most). */
static void check_stderr(const char *path, const char *scenario) {
  static char text[1 << 16];
  int hang_due = strcmp(scenario, "destroyloop") != 0;
  for (int waited_ms = 0;; waited_ms += 10) {
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f != NULL) fclose(f);
    text[n] = '\0';
    if (!hang_due || strstr(text, "(hang: ") != NULL || waited_ms >= 10000) break;
    sleep_ms(10);
  }
  printf("---- stderr ----\n%s---- end ----\n", text);
  CHECK(strstr(text, "fake cuda:") == NULL);
  if (strcmp(scenario, "destroyloop") == 0) CHECK(strstr(text, "hang") == NULL);
  if (strcmp(scenario, "manyops") == 0)
    CHECK(strstr(text, "(hang: ncclAllReduce #4501 not complete after 1000 ms)") != NULL);
  if (strcmp(scenario, "twocontexts") == 0)
    CHECK(strstr(text, "(hang: ncclAllReduce #4 not complete after 300 ms)") != NULL);
  if (strcmp(scenario, "sharedstream") == 0) {
    CHECK(strstr(text, "(hang: ncclAllReduce #1 not complete after 300 ms)") != NULL);
    CHECK(strstr(text, "under one event") == NULL);
    CHECK(strstr(text, " to #") == NULL);
  }
  if (strcmp(scenario, "failingrecord") == 0) {
    static const char line[] =
        "no hang dump: ncclAllReduce #2 is not watched: cuEventRecord failed (999)";
    const char *said = strstr(text, line);
    CHECK(said != NULL);
    CHECK(said == NULL || strstr(said + sizeof(line), "is not watched") == NULL); /* once */
    CHECK(strstr(text, ": cuEventQuery answered 999; that operation is no longer watched") != NULL);
    CHECK(strstr(text, "(hang: ncclAllReduce #5 not complete after 300 ms)") != NULL);
  }
  if (strcmp(scenario, "inprogress") == 0)
    CHECK(strstr(text, "(hang: ncclAllReduce #2 not complete after 300 ms)") != NULL);
  if (strcmp(scenario, "simulated") == 0)
    CHECK(strstr(text, "(hang: ncclAllReduce #2 not complete after 300 ms)") != NULL);
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  char path[512];
  for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d != NULL) closedir(d);
  rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr,
            "usage: hang_track destroyloop|manyops|twocontexts|sharedstream|"
            "failingrecord|inprogress|simulated\n");
    return 2;
  }
  const char *scenario = argv[1];
  const char *dir = getenv("HANG_TRACK_DIR");
  if (dir == NULL) { /* the recorder reads its settings when the drop-in loads: run again */
    static char made[] = "/tmp/hang-track-XXXXXX";
    if (mkdtemp(made) == NULL) return 2;
    setenv("HANG_TRACK_DIR", made, 1);
    setenv("NCCLSHIM_RECORD", "100", 1);
    setenv("NCCLSHIM_RECORD_DIR", made, 1);
    setenv("NCCLSHIM_RECORD_HANG_MS", strcmp(scenario, "manyops") == 0 ? "1000" : "300", 1);
    /* argv[0] as the runner gave it (under valgrind /proc/self/exe is valgrind's), through a
     * cross build's exe_wrapper: the kernel cannot run the target's ELF without binfmt_misc */
    const char *again[12];
    int words = test_wrapper_words(again, 8);
    again[words] = strchr(argv[0], '/') != NULL ? argv[0] : "/proc/self/exe";
    again[words + 1] = scenario;
    again[words + 2] = NULL;
    execvp(again[0], (char *const *)again);
    perror(again[0]);
    return 2;
  }
  char err[512];
  snprintf(err, sizeof(err), "%s/stderr.txt", dir);
  if (freopen(err, "w", stderr) == NULL) return 2;
  setvbuf(stdout, NULL, _IONBF, 0);
  /* The fake NCCL, made live (it makes communicators); the drop-in loads the same file. */
  void *nccl = dlopen(getenv("NCCLSHIM_NCCL_LIBRARY"), RTLD_NOW | RTLD_GLOBAL);
  void (*live)(int) =
      nccl != NULL ? (void (*)(int))(uintptr_t)dlsym(nccl, "fake_nccl_set_live") : NULL;
  nccl_inject = nccl != NULL
                    ? (void (*)(const char *, int, int))(uintptr_t)dlsym(nccl, "fake_nccl_inject")
                    : NULL;
  if (live == NULL || nccl_inject == NULL || fake_cuda_bind(NULL, &fake) != 0) return 2;
  live(1);
  void *cuda = dlopen(getenv("NCCLSHIM_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  stream_create = (create_fn)(uintptr_t)dlsym(cuda, "cuStreamCreate");
  stream_destroy = (stream_fn)(uintptr_t)dlsym(cuda, "cuStreamDestroy_v2");
  stream_synchronize = (stream_fn)(uintptr_t)dlsym(cuda, "cuStreamSynchronize");
  ctx_set_current = (set_ctx_fn)(uintptr_t)dlsym(cuda, "cuCtxSetCurrent");
  if (fake.use_device(0) != 0 || stream_create == NULL || stream_destroy == NULL) return 2;
  if (strcmp(scenario, "destroyloop") == 0)
    destroyloop(dir);
  else if (strcmp(scenario, "manyops") == 0)
    manyops(dir);
  else if (strcmp(scenario, "twocontexts") == 0)
    twocontexts(dir);
  else if (strcmp(scenario, "sharedstream") == 0)
    sharedstream(dir);
  else if (strcmp(scenario, "failingrecord") == 0)
    failingrecord(dir);
  else if (strcmp(scenario, "inprogress") == 0)
    inprogress(dir);
  else if (strcmp(scenario, "simulated") == 0)
    simulated(dir);
  else
    return 2;
  fflush(stderr);
  check_stderr(err, scenario);
  remove_dir(dir);
  printf("%s: %s\n", scenario, failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
