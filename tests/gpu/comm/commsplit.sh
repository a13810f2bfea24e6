#!/usr/bin/env bash
# Split-blocking destroy on the GPU host, a part of tests/gpu/run.sh (PARTS=commsplit), 90 s at
# most (about 30 s): a one-rank NCCLSHIM_COMM_SPLIT_BLOCKING communicator (init, split, one
# all-reduce on the blocking child, destroy) on each NCCL (system, pip, 2.29.7 when
# NCCL_2297 is set), with NCCL_COMM_BLOCKING unset, 0 and 1. NCCL lets the variable override
# the child's blocking config; destroy must still reach DESTROYED (it used to answer OK with
# the state left ready when the child's finalize answered ncclInProgress).
# Writes ${OUT:-/tmp/out}/commsplit/: split.csv (case,verdict,destroy_status,state_after,
# destroy_ms), summary.txt, build.log and one log per case. Success: every verdict `ok`.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" commsplit
tool=$build/commsplit_gpu
part_build && part_compile cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Itests/gpu/comm \
  tests/gpu/comm/commsplit_gpu.c tests/gpu/comm/gpu_common.c -o "$tool" || exit 1

csv=$out/split.csv
echo "case,verdict,destroy_status,state_after,destroy_ms" >"$csv"
for which in "${nccls[@]}"; do
  lib=$(nccl_lib "$which")
  [ -f "$lib" ] || { echo "$which: no $lib: skipped" >>"$out/summary.txt"; continue; }
  for blocking in unset 0 1; do
    name=$which-env-$blocking
    if [ $((SECONDS - start)) -gt 60 ]; then echo "$name,FAIL: no time left,,," >>"$csv"; continue; fi
    env=(NCCLSHIM_NCCL_LIBRARY="$lib")
    [ "$blocking" = unset ] || env+=(NCCL_COMM_BLOCKING="$blocking")
    env "${env[@]}" timeout 25 "$tool" "$name" >"$out/$name.log" 2>&1
    rc=$?
    line=$(grep "^$name," "$out/$name.log")
    if [ -n "$line" ]; then echo "$line" >>"$csv"
    elif [ $rc -eq 77 ]; then echo "$name,FAIL: skipped (no GPU or no NCCL: see $name.log),,," >>"$csv"
    else echo "$name,FAIL: exit $rc (see $name.log),,," >>"$csv"; fi
  done
done
cases=$(($(wc -l <"$csv") - 1))
failed=$(grep -c ',FAIL' "$csv")
echo "commsplit: $cases cases, $failed failed ($((SECONDS - start)) s)" | tee -a "$out/summary.txt"
head -12 "$csv" | tr , "\t"  # no column(1) on the GPU host
[ "$cases" -gt 0 ] && [ "$failed" -eq 0 ]
