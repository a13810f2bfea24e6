#!/usr/bin/env bash
# The bounded wait's lateness and CPU use (bench/wait_cost.c), with the default pacing and
# with NCCLSHIM_WAIT_SPIN_US=0 (sleep from the start), on any machine. Writes
# bench/results/wait-cost-HOST.csv and prints, per wait, the median and 90th percentile
# overshoot against the goal max(2 us, 5 %) and the median CPU share.
# Usage: bench/wait.sh [BUILD_DIR] (REPS=200)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" >/dev/null
out=bench/results/wait-cost-$(hostname -s).csv
mkdir -p bench/results
lib=$(realpath "$build/bench/libtimed-nccl.so")
echo "pacing,wait_us,rep,overshoot_ns,cpu" >"$out"
"$build/bench/wait_cost" "$lib" "${REPS:-200}" | tail -n +2 | sed 's/^/default,/' >>"$out"
NCCLSHIM_WAIT_SPIN_US=0 "$build/bench/wait_cost" "$lib" "${REPS:-200}" | tail -n +2 |
  sed 's/^/spin0,/' >>"$out"
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{'pacing':8} {'wait_us':>8} {'goal_us':>8} {'median_us':>10} {'p90_us':>8} {'cpu':>5} ok")
for pacing in ("default", "spin0"):
    waits = sorted({int(r["wait_us"]) for r in rows if r["pacing"] == pacing})
    for w in waits:
        sel = [r for r in rows if r["pacing"] == pacing and int(r["wait_us"]) == w]
        over = sorted(int(r["overshoot_ns"]) / 1000 for r in sel)
        cpu = statistics.median(float(r["cpu"]) for r in sel)
        goal = max(2.0, 0.05 * w)
        med, p90 = statistics.median(over), over[int(0.9 * (len(over) - 1))]
        print(f"{pacing:8} {w:8} {goal:8.1f} {med:10.2f} {p90:8.2f} {cpu:5.2f} "
              f"{'yes' if med <= goal else 'NO'}")
PY
