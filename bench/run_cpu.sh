#!/usr/bin/env bash
# The CPU half of the benchmarks (any machine): call cost and init cost, as CSV under
# bench/results/, then the plots. Usage: bench/run_cpu.sh [BUILD_DIR] [REAL_LIBNCCL...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" >/dev/null
host=$(hostname -s)
results=bench/results
mkdir -p "$results"
noop=$build/bench/libnoop-nccl.so
calls=${CALLS:-100000000}
reps=${REPS:-7}

# 1. Call cost: 10^8 calls per repetition, four ways.
out=$results/call-cost-$host.csv
echo "way,calls,rep,ns_per_call" >"$out"
for _ in 1 2; do # interleave the processes too
  {
    "$build/bench/call_cost_direct" "$noop" "$calls" "$reps"
    "$build/bench/call_cost" "$noop" "$calls" "$reps"
    NCCLSHIM_NCCL_LIBRARY=$(realpath "$noop") "$build/bench/call_cost_dropin" "$noop" "$calls" "$reps"
  } >>"$out"
done

# 2. Init cost: one fresh process per measurement, raw and shim alternating.
out=$results/init-cost-$host.csv
echo "way,library,us" >"$out"
for lib in "$(realpath "$noop")" "$@"; do
  for _ in $(seq 1 "${INIT_REPS:-30}"); do
    "$build/bench/init_cost" raw "$lib" 2>/dev/null >>"$out"
    "$build/bench/init_cost" shim "$lib" 2>/dev/null >>"$out"
  done
done
python3 bench/summarize.py "$results" "$host"
