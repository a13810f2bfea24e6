#!/usr/bin/env bash
# What ncclshim_comm_record costs the enqueueing thread (issue 28: median <= 100 ns), a part
# of bench/gpu/session.sh (PARTS=recordcost), or from the repository root:
#   bash bench/gpu/recordcost.sh
# Builds (or reuses) build-gpu/, compiles bench/gpu/recordcost.cu with nvcc against it and
# runs it on the NCCL that NCCLSHIM_NCCL_LIBRARY names (default $SYS_NCCL): in one process,
# call by call, 8-float all-reduces with and without their record. Writes
# ${OUT:-/tmp/out}/recordcost/: record-cost.csv (what,ns: row `record` is the median of the
# paired differences; the pieces beside it), verdict.csv (case,verdict,ns,limit_ns), a log.
# About 10 s. NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}/recordcost
mkdir -p "$out"
lib=${NCCLSHIM_NCCL_LIBRARY:-${SYS_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}}

# shellcheck source=bench/gpu/cuda_bench.sh
source bench/gpu/cuda_bench.sh
bin=build-gpu/bench-recordcost
build_cuda_bench bench/gpu/recordcost.cu "$bin" "$out/build.log" || exit 1
NCCLSHIM_NCCL_LIBRARY=$lib timeout 85 "$bin" >"$out/record-cost.csv" 2>"$out/recordcost.log"
echo "recordcost on $lib: exit $?"
cat "$out/record-cost.csv"
ns=$(awk -F, '$1 == "record" {print $2}' "$out/record-cost.csv")
verdict="FAIL: no record row"
if [ -n "$ns" ]; then
  verdict=$(awk -v ns="$ns" 'BEGIN {print (ns <= 100) ? "ok" : "FAIL: median above 100 ns"}')
fi
{ echo "case,verdict,ns,limit_ns"; echo "record-median,$verdict,${ns:-},100"; } >"$out/verdict.csv"
echo "record: ${ns:-none} ns median: $verdict"
