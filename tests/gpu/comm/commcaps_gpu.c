/* What a communicator can do, and the agreement check, on two GPUs (tests/gpu/comm/commcaps.sh).
 *   commcaps_gpu has                 every ncclshim_comm_has answer and the facts, per rank
 *   commcaps_gpu agree SCENARIO      ncclshim_comm_agree with rank 1 made to differ:
 *     none          nothing differs: the cost (first call, then the median of 20)
 *     plugin        rank 1 gets NCCL_NET_PLUGIN=$FAKE_PLUGIN (an ABI NCCL refuses, so both
 *                   ranks still run NCCL's own transport) before its init
 *     proto         rank 1 gets NCCL_PROTO=Simple before its init (NCCL itself then differs)
 *     proto-late    rank 1 sets NCCL_PROTO=Simple after its init (only the record differs)
 * Lines: CAPS,rank,cap,answer,reason / FACTS,rank,... / AGREE,scenario,rank,status,ms,message
 * / COST,what,ms. Exit 0, 1 on an unexpected outcome, 77 without NCCL or two GPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_common.h"
#include "ncclshim/comm_query.h"
#include "ncclshim/symmem.h"

enum { WAIT_MS = 20000, AGREE_MS = 10000, REPEAT = 20 };

static double now_ms(void) { return (double)gpu_now_ms(); }

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int has(gpu_rank *r, void *arg) {
  (void)arg;
  ncclshim_comm *comm = NULL;
  GPU_OK(r, ncclshim_comm_init(r->nccl, r->nranks, &r->id, r->rank, NULL, &comm));
  static const char *const answers[] = {"no", "yes", "unknown"};
  for (int cap = 0; cap < NCCLSHIM_COMM_CAPABILITY_COUNT; cap++) {
    ncclshim_answer answer;
    char why[512];
    double t = now_ms();
    GPU_OK(r, ncclshim_comm_has(comm, cap, WAIT_MS, &answer, why, sizeof(why)));
    printf("CAPS,%d,%s,%s,%.1f ms,%s\n", r->rank, ncclshim_comm_capability_name(cap),
           answers[answer], now_ms() - t, why);
  }
  ncclshim_comm_facts f = NCCLSHIM_COMM_FACTS_INIT;
  ncclshim_status status = ncclshim_comm_query_facts(comm, &f);
  if (status == NCCLSHIM_OK)
    printf("FACTS,%d,nranks %d,cuda %d,device_api %d,multimem %d,gin %s,lsa_teams %d,host_rma %d\n",
           r->rank, f.nranks, f.cuda_device, f.device_api, f.multimem,
           ncclshim_gin_type_name(f.gin_type), f.lsa_teams, f.host_rma);
  else
    printf("FACTS,%d,%s,%s\n", r->rank, ncclshim_status_name(status), ncclshim_last_error());
  ncclshim_symmem *mem = NULL;
  status = ncclshim_symmem_alloc(comm, 1 << 20, r->stream, WAIT_MS, &mem);
  printf("SYMMEM,%d,%s,%s\n", r->rank, ncclshim_status_name(status),
         status == NCCLSHIM_OK ? "window registered" : ncclshim_last_error());
  if (status == NCCLSHIM_OK) GPU_OK(r, ncclshim_symmem_free(mem, WAIT_MS));
  GPU_OK(r, ncclshim_comm_destroy(comm, WAIT_MS));
  ncclshim_comm_free(comm);
  return GPU_PASS;
}

static int agree(gpu_rank *r, void *arg) {
  const char *scenario = arg;
  if (r->rank == 1 && strcmp(scenario, "plugin") == 0)
    setenv("NCCL_NET_PLUGIN", getenv("FAKE_PLUGIN"), 1);
  if (r->rank == 1 && strcmp(scenario, "proto") == 0) setenv("NCCL_PROTO", "Simple", 1);
  ncclshim_comm *comm = NULL;
  GPU_OK(r, ncclshim_comm_init(r->nccl, r->nranks, &r->id, r->rank, NULL, &comm));
  if (r->rank == 1 && strcmp(scenario, "proto-late") == 0) setenv("NCCL_PROTO", "Simple", 1);
  double t = now_ms();
  ncclshim_status status = ncclshim_comm_agree(comm, AGREE_MS);
  double first = now_ms() - t;
  printf("AGREE,%s,%d,%s,%.2f,%s\n", scenario, r->rank, ncclshim_status_name(status), first,
         status == NCCLSHIM_OK ? "" : ncclshim_last_error());
  int expected = strcmp(scenario, "none") == 0 ? status == NCCLSHIM_OK
                 : strcmp(scenario, "proto") == 0
                     ? status == NCCLSHIM_UNAVAILABLE || status == NCCLSHIM_TIMEOUT
                     : status == NCCLSHIM_UNAVAILABLE;
  if (strcmp(scenario, "none") == 0 && status == NCCLSHIM_OK) {
    double all[REPEAT], record[REPEAT];
    char buf[NCCLSHIM_AGREE_RECORD];
    for (int i = 0; i < REPEAT; i++) {
      t = now_ms();
      GPU_OK(r, ncclshim_comm_agree(comm, AGREE_MS));
      all[i] = now_ms() - t;
      t = now_ms();
      ncclshim_agree_record(r->nccl, buf, sizeof(buf));
      record[i] = now_ms() - t;
    }
    qsort(all, REPEAT, sizeof(double), by_value);
    qsort(record, REPEAT, sizeof(double), by_value);
    if (r->rank == 0) {
      printf("COST,first agree (ms),%.2f\n", first);
      printf("COST,agree median of %d (ms),%.3f\n", REPEAT, all[REPEAT / 2]);
      printf("COST,agree max of %d (ms),%.3f\n", REPEAT, all[REPEAT - 1]);
      printf("COST,record build median (ms),%.3f\n", record[REPEAT / 2]);
      printf("COST,record bytes per rank,%d\n", NCCLSHIM_AGREE_RECORD);
      printf("RECORD,%s", buf);
    }
  }
  if (status == NCCLSHIM_TIMEOUT || status == NCCLSHIM_NCCL_ERROR)
    ncclshim_comm_abort(comm, WAIT_MS);
  else
    ncclshim_comm_destroy(comm, WAIT_MS);
  ncclshim_comm_free(comm);
  if (!expected)
    printf("FAIL,%s,rank %d: unexpected %s\n", scenario, r->rank, ncclshim_status_name(status));
  return expected ? GPU_PASS : GPU_FAIL;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "has") != 0 && (strcmp(argv[1], "agree") != 0 || argc != 3))) {
    fprintf(stderr, "usage: %s has | agree none|plugin|proto|proto-late\n", argv[0]);
    return GPU_FAIL;
  }
  gpu_require(2);
  if (strcmp(argv[1], "has") == 0) return gpu_run_ranks(2, has, NULL, 120);
  if (strcmp(argv[2], "plugin") == 0 && getenv("FAKE_PLUGIN") == NULL) {
    printf("skip: FAKE_PLUGIN is not set\n");
    return GPU_SKIP;
  }
  return gpu_run_ranks(2, agree, argv[2], 60);
}
