#!/usr/bin/env bash
# What ncclshim_comm_record costs the enqueueing thread (goal: median <= 100 ns), a part
# of tests/gpu/run.sh (PARTS=recordcost), or from the repository root:
#   bash bench/gpu/recordcost.sh
# Builds (or reuses) build-gpu/, compiles bench/gpu/recordcost.cu with nvcc against it and
# runs it on the NCCL that NCCLSHIM_NCCL_LIBRARY names, or when it is unset on $SYS_NCCL and
# on $NCCL_2297 when given: in one process, call by call, 8-float all-reduces with and
# without their record. Writes ${OUT:-/tmp/out}/recordcost/: record-cost.csv (what,ns, the
# first NCCL's: row `record` is the median of the paired differences, the pieces beside
# it), record-cost-2297.csv for NCCL_2297, verdict.csv (case,verdict,nccl,ns,limit_ns: the
# goal is record <= 100 ns), a log per run. About 10 s per NCCL. NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../../tests/gpu/part_common.sh" recordcost

bin=$build/bench-recordcost
part_build && part_compile "$cuda/bin/nvcc" -arch=sm_90 -O2 bench/gpu/recordcost.cu -o "$bin" ||
  exit 1
if [ -n "${NCCLSHIM_NCCL_LIBRARY:-}" ]; then
  runs=("first=$NCCLSHIM_NCCL_LIBRARY")
else
  runs=("first=$sys_nccl")
  [ -n "${NCCL_2297:-}" ] && runs+=("2297=$NCCL_2297")
fi
echo "case,verdict,nccl,ns,limit_ns" >"$out/verdict.csv"
for run in "${runs[@]}"; do
  name=${run%%=*} lib=${run#*=}
  csv=$out/record-cost.csv
  [ "$name" = first ] || csv=$out/record-cost-$name.csv
  NCCLSHIM_NCCL_LIBRARY=$lib timeout 40 "$bin" >"$csv" 2>"$out/recordcost-$name.log"
  echo "recordcost on $lib: exit $?"
  cat "$csv"
  ns=$(awk -F, '$1 == "record" {print $2}' "$csv")
  verdict="FAIL: no record row (see recordcost-$name.log)"
  if [ -n "$ns" ]; then
    verdict=$(awk -v ns="$ns" 'BEGIN {print (ns <= 100) ? "ok" : "FAIL: median above 100 ns"}')
  fi
  echo "record-median,$verdict,$lib,${ns:-},100" >>"$out/verdict.csv"
  echo "record on $lib: ${ns:-none} ns median: $verdict"
done
