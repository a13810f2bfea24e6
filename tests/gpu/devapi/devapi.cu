/* The device API on 2 GPUs of one host, one thread per rank: creates a device communicator
 * with an LSA barrier requirement, queries its teams on the host, runs a kernel that
 * all-reduces through the LSA pointers of a symmetric window and checks the sums, destroys it
 * all; from 2.29.2 also ncclCommQueryProperties, ncclGetLsaDevicePointer and
 * ncclGetPeerDevicePointer, compared with the loaded library's own functions (dlsym).
 * Multimem stays off: no multicast object is created, the multimem queries are skipped.
 *
 * tests/gpu/devapi/devapi.sh builds it with nvcc against one release's nccl.h and nccl_device.h, in
 * one of three ways:
 *   -DVIA_TABLE   every NCCL call through ncclshim's table (links libncclshim)
 *   -DVIA_DROPIN  NCCL's names, linked against libncclshim-nccl alone
 *   (neither)     NCCL's names, linked against that NCCL directly: the reference
 * NCCLSHIM_NCCL_LIBRARY names the NCCL for the first two. Prints key=value lines; exit 0 when
 * every check passed. */
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#ifdef VIA_TABLE
#include "ncclshim/ncclshim.h"
#define NCCL(fn) ncclshim_table()->fn
#define MODE "table"
#elif defined(VIA_DROPIN)
#define NCCL(fn) fn
#define MODE "dropin"
#else
#define NCCL(fn) fn
#define MODE "direct"
#endif

namespace {

constexpr int RANKS = 2, CTAS = 16, THREADS = 512;
constexpr size_t COUNT = 1 << 20;

int failures;
pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

void fail(int rank, const char *what, long long got, long long want) {
  pthread_mutex_lock(&print_lock);
  std::printf("FAIL rank %d %s: got %lld, want %lld\n", rank, what, got, want);
  failures++;
  pthread_mutex_unlock(&print_lock);
}

/* On a `call` that does not answer `ok` (of `type`): a failure named `text`, and return. */
#define CHECK_AS(type, ok, rank, call, text) \
  do {                                       \
    type r_ = (call);                        \
    if (r_ != (ok)) {                        \
      fail(rank, text, r_, ok);              \
      return;                                \
    }                                        \
  } while (0)
/* #call here, before NCCL(fn) expands: the failure names the call as written. */
#define CHECK_NCCL(rank, call) CHECK_AS(ncclResult_t, ncclSuccess, rank, call, #call)
#define CHECK_CUDA(rank, call) CHECK_AS(cudaError_t, cudaSuccess, rank, call, #call)

/* The device API's host calls; through the table they take ncclshim's types, which forward
 * the same pointers and pass ncclTeam_t's three ints by value. */
#ifdef VIA_TABLE
ncclTeam_t team(ncclshim_team_t t) {
  ncclTeam_t r;
  std::memcpy(&r, &t, sizeof(r));
  return r;
}
ncclshim_team_t shim_team(ncclTeam_t t) {
  ncclshim_team_t r;
  std::memcpy(&r, &t, sizeof(r));
  return r;
}
ncclResult_t dev_comm_create(ncclComm_t c, const ncclDevCommRequirements *q, ncclDevComm *d) {
  return NCCL(ncclDevCommCreate)(c, reinterpret_cast<const ncclshim_dev_comm_requirements_t *>(q),
                                 reinterpret_cast<ncclshim_dev_comm_t *>(d));
}
ncclResult_t dev_comm_destroy(ncclComm_t c, const ncclDevComm *d) {
  return NCCL(ncclDevCommDestroy)(c, reinterpret_cast<const ncclshim_dev_comm_t *>(d));
}
ncclTeam_t team_world(ncclComm_t c) { return team(NCCL(ncclTeamWorld)(c)); }
ncclTeam_t team_lsa(ncclComm_t c) { return team(NCCL(ncclTeamLsa)(c)); }
ncclTeam_t team_rail(ncclComm_t c) { return team(NCCL(ncclTeamRail)(c)); }
int rank_to_world(ncclComm_t c, ncclTeam_t t, int r) {
  return NCCL(ncclTeamRankToWorld)(c, shim_team(t), r);
}
int rank_to_lsa(ncclComm_t c, ncclTeam_t t, int r) {
  return NCCL(ncclTeamRankToLsa)(c, shim_team(t), r);
}
ncclResult_t lsa_barrier_requirement(ncclTeam_t t, int n, ncclLsaBarrierHandle_t *h,
                                     ncclDevResourceRequirements_t *q) {
  return NCCL(ncclLsaBarrierCreateRequirement)(
      shim_team(t), n, reinterpret_cast<ncclshim_lsa_barrier_handle_t *>(h),
      reinterpret_cast<ncclshim_dev_resource_requirements_t *>(q));
}
#if NCCL_VERSION_CODE >= 22902
ncclResult_t query_properties(ncclComm_t c, ncclCommProperties_t *p) {
  return NCCL(ncclCommQueryProperties)(c, reinterpret_cast<ncclshim_comm_properties_t *>(p));
}
#endif
#else
ncclResult_t dev_comm_create(ncclComm_t c, const ncclDevCommRequirements *q, ncclDevComm *d) {
  return ncclDevCommCreate(c, q, d);
}
ncclResult_t dev_comm_destroy(ncclComm_t c, const ncclDevComm *d) {
  return ncclDevCommDestroy(c, d);
}
ncclTeam_t team_world(ncclComm_t c) { return ncclTeamWorld(c); }
ncclTeam_t team_lsa(ncclComm_t c) { return ncclTeamLsa(c); }
ncclTeam_t team_rail(ncclComm_t c) { return ncclTeamRail(c); }
int rank_to_world(ncclComm_t c, ncclTeam_t t, int r) { return ncclTeamRankToWorld(c, t, r); }
int rank_to_lsa(ncclComm_t c, ncclTeam_t t, int r) { return ncclTeamRankToLsa(c, t, r); }
ncclResult_t lsa_barrier_requirement(ncclTeam_t t, int n, ncclLsaBarrierHandle_t *h,
                                     ncclDevResourceRequirements_t *q) {
  return ncclLsaBarrierCreateRequirement(t, n, h, q);
}
#if NCCL_VERSION_CODE >= 22902
ncclResult_t query_properties(ncclComm_t c, ncclCommProperties_t *p) {
  return ncclCommQueryProperties(c, p);
}
#endif
#endif

__global__ void lsa_all_reduce(ncclWindow_t send, ncclWindow_t recv, size_t count,
                               ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm, ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);
  const int rank = devComm.rank, nRanks = devComm.nRanks;
  const size_t first = threadIdx.x + size_t(blockDim.x) * (rank + size_t(blockIdx.x) * nRanks);
  const size_t stride = size_t(blockDim.x) * gridDim.x * nRanks;
  for (size_t i = first; i < count; i += stride) {
    float sum = 0;
    for (int peer = 0; peer < nRanks; peer++)
      sum += static_cast<float *>(ncclGetLsaPointer(send, 0, peer))[i];
    for (int peer = 0; peer < nRanks; peer++)
      static_cast<float *>(ncclGetLsaPointer(recv, 0, peer))[i] = sum;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

ncclUniqueId id;

/* The loaded library's own function `name` (through NCCLSHIM_NCCL_LIBRARY), for comparison. */
template <class T> T library_function(const char *name) {
  const char *path = std::getenv("NCCLSHIM_NCCL_LIBRARY");
  void *library = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return library ? reinterpret_cast<T>(dlsym(library, name)) : nullptr;
}

void compare_queries(int rank, ncclComm_t comm, ncclWindow_t win, ncclTeam_t lsa) {
#if NCCL_VERSION_CODE >= 22902
  ncclCommProperties_t ours = NCCL_COMM_PROPERTIES_INITIALIZER;
  CHECK_NCCL(rank, query_properties(comm, &ours));
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_properties=rank %d nRanks %d cudaDev %d deviceApiSupport %d "
              "multimemSupport %d nLsaTeams %d\n",
              rank, ours.rank, ours.nRanks, ours.cudaDev, int(ours.deviceApiSupport),
              int(ours.multimemSupport), ours.nLsaTeams);
  pthread_mutex_unlock(&print_lock);
  if (ours.rank != rank) fail(rank, "properties.rank", ours.rank, rank);
  if (ours.nRanks != RANKS) fail(rank, "properties.nRanks", ours.nRanks, RANKS);
  if (!ours.deviceApiSupport) fail(rank, "properties.deviceApiSupport", 0, 1);
  std::vector<void *> lsa_ptrs(lsa.nRanks), peer_ptrs(RANKS);
  for (int p = 0; p < lsa.nRanks; p++)
    CHECK_NCCL(rank, NCCL(ncclGetLsaDevicePointer)(win, 0, p, &lsa_ptrs[p]));
  for (int p = 0; p < RANKS; p++)
    CHECK_NCCL(rank, NCCL(ncclGetPeerDevicePointer)(win, 0, p, &peer_ptrs[p]));
#if defined(VIA_TABLE) || defined(VIA_DROPIN)
  auto real_query = library_function<decltype(&ncclCommQueryProperties)>("ncclCommQueryProperties");
  auto real_lsa = library_function<decltype(&ncclGetLsaDevicePointer)>("ncclGetLsaDevicePointer");
  auto real_peer = library_function<decltype(&ncclGetPeerDevicePointer)>("ncclGetPeerDevicePointer");
  if (!real_query || !real_lsa || !real_peer) {
    fail(rank, "dlsym of the loaded NCCL's query functions", 0, 1);
    return;
  }
  ncclCommProperties_t theirs = NCCL_COMM_PROPERTIES_INITIALIZER;
  CHECK_NCCL(rank, real_query(comm, &theirs));
  if (std::memcmp(&ours, &theirs, sizeof(ours)) != 0)
    fail(rank, "ncclCommQueryProperties differs from the library's own answer", 1, 0);
  for (int p = 0; p < lsa.nRanks; p++) {
    void *direct = nullptr;
    CHECK_NCCL(rank, real_lsa(win, 0, p, &direct));
    if (direct != lsa_ptrs[p]) fail(rank, "ncclGetLsaDevicePointer vs the library's", 1, 0);
  }
  for (int p = 0; p < RANKS; p++) {
    void *direct = nullptr;
    CHECK_NCCL(rank, real_peer(win, 0, p, &direct));
    if (direct != peer_ptrs[p]) fail(rank, "ncclGetPeerDevicePointer vs the library's", 1, 0);
  }
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_queries_match_library=yes\n", rank);
  pthread_mutex_unlock(&print_lock);
#endif
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_lsa_pointers=%d peer_pointers=%d multimem=skipped\n", rank, lsa.nRanks,
              RANKS);
  pthread_mutex_unlock(&print_lock);
#else
  (void)comm, (void)win, (void)lsa;
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_queries=not in this release (before 2.29.2)\n", rank);
  pthread_mutex_unlock(&print_lock);
#endif
}

void run_rank(int rank) {
  CHECK_CUDA(rank, cudaSetDevice(rank));
  ncclComm_t comm;
  CHECK_NCCL(rank, NCCL(ncclCommInitRank)(&comm, RANKS, id, rank));
  ncclTeam_t world = team_world(comm), lsa = team_lsa(comm), rail = team_rail(comm);
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_teams=world {%d,%d,%d} lsa {%d,%d,%d} rail {%d,%d,%d}\n", rank,
              world.nRanks, world.rank, world.stride, lsa.nRanks, lsa.rank, lsa.stride,
              rail.nRanks, rail.rank, rail.stride);
  pthread_mutex_unlock(&print_lock);
  if (world.nRanks != RANKS || world.rank != rank) fail(rank, "world team", world.rank, rank);
  if (lsa.nRanks != RANKS) fail(rank, "LSA team size (2 GPUs over NVLink)", lsa.nRanks, RANKS);
  for (int r = 0; r < lsa.nRanks; r++) {
    int w = rank_to_world(comm, lsa, r);
    if (w != r) fail(rank, "ncclTeamRankToWorld(lsa, r)", w, r);
    int l = rank_to_lsa(comm, world, r);
    if (l != r) fail(rank, "ncclTeamRankToLsa(world, r)", l, r);
  }
  ncclLsaBarrierHandle_t barrier;
  ncclDevResourceRequirements_t barrier_req;
  std::memset(&barrier_req, 0, sizeof(barrier_req));
  CHECK_NCCL(rank, lsa_barrier_requirement(lsa, CTAS, &barrier, &barrier_req));

  const size_t bytes = COUNT * sizeof(float);
  void *send = nullptr, *recv = nullptr;
  ncclWindow_t send_win, recv_win;
  CHECK_NCCL(rank, NCCL(ncclMemAlloc)(&send, bytes));
  CHECK_NCCL(rank, NCCL(ncclMemAlloc)(&recv, bytes));
  CHECK_NCCL(rank, NCCL(ncclCommWindowRegister)(comm, send, bytes, &send_win,
                                                NCCL_WIN_COLL_SYMMETRIC));
  CHECK_NCCL(rank, NCCL(ncclCommWindowRegister)(comm, recv, bytes, &recv_win,
                                                NCCL_WIN_COLL_SYMMETRIC));
  std::vector<float> host(COUNT, float(rank + 1));
  CHECK_CUDA(rank, cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice));

  ncclDevComm dev_comm;
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
  ncclDevCommRequirements reqs;
  std::memset(&reqs, 0, sizeof(reqs));
#endif
  reqs.lsaBarrierCount = CTAS; /* one barrier per block of the kernel */
  CHECK_NCCL(rank, dev_comm_create(comm, &reqs, &dev_comm));
  cudaStream_t stream;
  CHECK_CUDA(rank, cudaStreamCreate(&stream));
  lsa_all_reduce<<<CTAS, THREADS, 0, stream>>>(send_win, recv_win, COUNT, dev_comm);
  CHECK_CUDA(rank, cudaGetLastError());
  CHECK_CUDA(rank, cudaStreamSynchronize(stream));
  CHECK_CUDA(rank, cudaMemcpy(host.data(), recv, bytes, cudaMemcpyDeviceToHost));
  const float want = RANKS * (RANKS + 1) / 2.0f;
  size_t wrong = 0;
  for (float v : host) wrong += v != want;
  if (wrong) fail(rank, "elements with a wrong sum", (long long)wrong, 0);
  pthread_mutex_lock(&print_lock);
  std::printf("rank%d_allreduce=%zu elements, %zu wrong (each should be %.0f)\n", rank, COUNT,
              wrong, want);
  pthread_mutex_unlock(&print_lock);

  compare_queries(rank, comm, recv_win, lsa);

  CHECK_NCCL(rank, dev_comm_destroy(comm, &dev_comm));
  CHECK_NCCL(rank, NCCL(ncclCommWindowDeregister)(comm, send_win));
  CHECK_NCCL(rank, NCCL(ncclCommWindowDeregister)(comm, recv_win));
  CHECK_NCCL(rank, NCCL(ncclMemFree)(send));
  CHECK_NCCL(rank, NCCL(ncclMemFree)(recv));
  CHECK_NCCL(rank, NCCL(ncclCommDestroy)(comm));
  CHECK_CUDA(rank, cudaStreamDestroy(stream));
}

void *rank_thread(void *arg) {
  run_rank(int(reinterpret_cast<intptr_t>(arg)));
  return nullptr;
}

}  // namespace

int main() {
  int version = 0;
  NCCL(ncclGetVersion)(&version);
  std::printf("mode=%s\nheaders=%d\nlibrary=%d\n", MODE, NCCL_VERSION_CODE, version);
#ifdef VIA_TABLE
  if (ncclshim_init() != NCCLSHIM_OK) {
    std::printf("FAIL ncclshim_init: %s\n", ncclshim_nccl_message(ncclshim_nccl_default()));
    return 1;
  }
  std::printf("device_api_capability=%d\n",
              ncclshim_nccl_has(ncclshim_nccl_default(), NCCLSHIM_CAP_DEVICE_API));
  if (!ncclshim_nccl_has(ncclshim_nccl_default(), NCCLSHIM_CAP_DEVICE_API)) failures++;
#endif
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < RANKS) {
    std::printf("SKIP needs %d GPUs, found %d\n", RANKS, devices);
    return 77;
  }
  if (NCCL(ncclGetUniqueId)(&id) != ncclSuccess) {
    std::printf("FAIL ncclGetUniqueId\n");
    return 1;
  }
  pthread_t threads[RANKS];
  for (int r = 0; r < RANKS; r++)
    pthread_create(&threads[r], nullptr, rank_thread, reinterpret_cast<void *>(intptr_t(r)));
  for (pthread_t t : threads) pthread_join(t, nullptr);
  std::printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
