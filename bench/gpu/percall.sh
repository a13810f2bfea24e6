#!/usr/bin/env bash
# Host-visible time per all-reduce call with and without hang detection, on the
# GPU host, in one command from the repository root:
#   [NCCL_2297=/path/libnccl.so.2] bash bench/gpu/percall.sh
# Builds (or reuses) build-gpu/, builds bench/gpu/percall.c three ways per NCCL (direct,
# drop-in, ncclshim's table) against that NCCL's nccl.h, and runs, for the system NCCL
# (2.28.3) and NCCL_2297 (skipped when unset), ROUNDS (2) rounds of the variants at
# 8 B .. 1 GiB, the processes interleaved and the variants taking turns call by call inside
# each: every build runs NCCL's own blocking and spin beside its own variants (shim: table,
# nonblocking, watchdog; drop-in: dropin), so that each ratio compares calls of one process.
# Then the stopped-rank detection (deadline DEADLINE_MS, 1000) and the bounded wait's lateness
# on the CPU (build-gpu/bench/wait_cost). Writes ${OUT:-/tmp/out}/percall/: percall.csv
# (every row), summary.csv (median over rounds), ratios.md (the goals: watchdog / blocking
# and nonblocking / spin <= 1.05, each the median over rounds of one process's ratio;
# detection <= deadline + 10 %), detect.csv, wait-cost.csv, percall-*.png when gnuplot is
# there, logs. A time budget (BUDGET_S, 280 s) skips what is left rather than overrun; no
# process outlives its step. NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../../tests/gpu/part_common.sh" percall 280
rounds=${ROUNDS:-2}
deadline=${DEADLINE_MS:-1000}
max_bytes=${MAX_BYTES:-1073741824}
ncclses=(sys)
[ -n "${NCCL_2297:-}" ] && ncclses+=(2297)
nccl_inc() { if [ "$1" = sys ]; then echo "$sys_include"; else echo "$(dirname "$NCCL_2297")/../include"; fi; }

echo "=== build ($(date -u +%T))"
part_build || exit 1
bin=$out/bin
mkdir -p "$bin"
for which in "${ncclses[@]}"; do
  lib=$(nccl_lib "$which")
  cc=(gcc -std=c11 -O2 -Wall -Wextra -Werror -Itests/support -Ibench "-I$cuda/include" "-I$(nccl_inc "$which")"
    bench/gpu/percall.c)
  cudart=("-L$cuda/lib64" -lcudart "-Wl,-rpath,$cuda/lib64")
  if ! { "${cc[@]}" -o "$bin/direct-$which" "$lib" -Wl,-rpath,"$(dirname "$lib")" "${cudart[@]}" &&
    "${cc[@]}" -o "$bin/dropin-$which" -DVIA_DROPIN "-L$build/src/dropin" -lncclshim-nccl \
      -Wl,-rpath,"$PWD/$build/src/dropin" "${cudart[@]}" &&
    "${cc[@]}" -o "$bin/shim-$which" -DVIA_TABLE -Iinclude "-L$build/src" -lncclshim \
      -Wl,-rpath,"$PWD/$build/src" "${cudart[@]}"; }; then
    echo "build of percall against $which failed"
    exit 1
  fi
done

# run NAME WAY NCCL ARGS...: one process pair (WAY: direct, shim or dropin, the program's
# build), its rows tagged with the round.
run() {
  local name=$1 way=$2 which=$3 t=$SECONDS
  shift 3
  if [ "$(time_left)" -lt 30 ]; then
    echo "$name: skipped (time budget)" | tee -a "$out/skipped.txt"
    return
  fi
  NCCLSHIM_NCCL_LIBRARY=$(nccl_lib "$which") timeout -k 5 120 "$bin/$way-$which" "$@" \
    >"$out/$name.out" 2>"$out/$name.log"
  local rc=$?
  printf '%-34s exit %3d  %3ds\n' "$name" "$rc" $((SECONDS - t))
  kill_orphans "^$bin/" "$name"
}

echo "=== per-call times, $rounds rounds ($(date -u +%T))"
echo "round,build,variant,nccl,bytes,us_median,us_p10,us_p90,calls,enqueue_us_median" \
  >"$out/percall.csv"
for round in $(seq 1 "$rounds"); do
  for which in "${ncclses[@]}"; do
    run "r$round-$which-direct" direct "$which" blocking,spin 8 "$max_bytes"
    run "r$round-$which-shim" shim "$which" blocking,spin,table,nonblocking,watchdog 8 "$max_bytes"
    run "r$round-$which-dropin" dropin "$which" blocking,spin,dropin 8 "$max_bytes"
    for way in direct shim dropin; do
      [ -f "$out/r$round-$which-$way.out" ] &&
        sed "s/^/$round,$way,/" "$out/r$round-$which-$way.out" >>"$out/percall.csv"
    done
  done
done

echo "=== a stopped rank, deadline $deadline ms ($(date -u +%T))"
echo "what,nccl,mode,deadline_ms,detected_ms,ratio,released_ms" >"$out/detect.csv"
for which in "${ncclses[@]}"; do
  run "detect-$which" shim "$which" detect "$deadline"
  grep '^detect,' "$out/detect-$which.out" >>"$out/detect.csv"
done

echo "=== the bounded wait's lateness and CPU ($(date -u +%T))"
if [ "$(time_left)" -gt 20 ]; then
  wlib=$(realpath "$build/bench/libtimed-nccl.so")
  echo "pacing,wait_us,rep,overshoot_ns,cpu" >"$out/wait-cost.csv"
  timeout 60 "$build/bench/wait_cost" "$wlib" 50 | tail -n +2 | sed 's/^/default,/' >>"$out/wait-cost.csv"
  NCCLSHIM_WAIT_SPIN_US=0 timeout 60 "$build/bench/wait_cost" "$wlib" 50 | tail -n +2 |
    sed 's/^/spin0,/' >>"$out/wait-cost.csv"
fi

echo "=== summary ($(date -u +%T))"
python3 bench/gpu/percall_summary.py "$out"

if command -v gnuplot >/dev/null; then
  bash bench/gpu/percall_plot.sh "$out" || echo "plot failed"
else
  echo "no gnuplot here: plot later with bench/gpu/percall_plot.sh DIR"
fi
echo "=== done in $((SECONDS - start)) s ($(date -u +%T))"
