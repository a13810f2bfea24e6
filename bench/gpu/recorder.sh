#!/usr/bin/env bash
# The flight recorder's cost on the GPU host's CPU, a stage of bench/gpu/run.sh
# (STAGES=recorder), or alone from the repository root: bash bench/gpu/recorder.sh
# Builds (or reuses) build-gpu/, then, on the no-op NCCL of bench/noop_nccl.c (no GPU work),
# three rounds of each:
#   per call    bench/recorder_cost: ns per call through the drop-in, recorder off and on
#               (recorder-cost-h200x2.csv, its medians in recorder-cost-summary-h200x2.txt)
#   per comm    bench/recorder_comms: 10,000 communicators created and destroyed in turn, ns
#               per all-reduce with the recorder off and on (recorder-comms-h200x2.csv); the
#               dumps' communicator ids counted (cost-ids.txt: "ids ok" when none was lost)
# Writes ${OUT:-/tmp/out}/recorder/ and summary.txt there. About a minute.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../../tests/gpu/part_common.sh" recorder

part_build || exit 1
noop=$(realpath "$build/bench/libnoop-nccl.so" 2>/dev/null) || { say "no $build/bench/libnoop-nccl.so"; exit 1; }

csv=$out/recorder-cost-h200x2.csv
echo "recorder,call,calls,rep,ns_per_call" >"$csv"
for _ in 1 2 3; do
  NCCLSHIM_NCCL_LIBRARY=$noop "$build/bench/recorder_cost" 20000000 5 >>"$csv"
  NCCLSHIM_NCCL_LIBRARY=$noop NCCLSHIM_RECORD=10000 NCCLSHIM_RECORD_DIR=/tmp \
    "$build/bench/recorder_cost" 20000000 5 >>"$csv"
done
python3 - "$csv" <<'PY' >"$out/recorder-cost-summary-h200x2.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med.setdefault((r["recorder"], r["call"]), []).append(float(r["ns_per_call"]))
for call in ("ncclAllReduce", "ncclGroupStart"):
    off, on = statistics.median(med[("off", call)]), statistics.median(med[("on", call)])
    print("%s: recorder off %.2f ns, on %.2f ns: +%.2f ns per call" % (call, off, on, on - off))
PY
say "per call: $(tr '\n' ' ' <"$out/recorder-cost-summary-h200x2.txt")"

csv=$out/recorder-comms-h200x2.csv
mkdir -p "$out/cost-dumps"
echo "recorder,comms,calls,ns_per_call,ns_per_comm" >"$csv"
ids=ok
for _ in 1 2 3; do
  NCCLSHIM_NCCL_LIBRARY=$noop "$build/bench/recorder_comms" 10000 1000 >>"$csv"
  NCCLSHIM_NCCL_LIBRARY=$noop NCCLSHIM_RECORD=10000 NCCLSHIM_RECORD_DIR="$out/cost-dumps" \
    NCCLSHIM_RECORD_SIGNAL=USR1 "$build/bench/recorder_comms" 10000 1000 \
    >"$out/cost-on.txt" 2>&1 || ids=LOST
  grep -v "^ids:\|^ncclshim" "$out/cost-on.txt" >>"$csv"
  grep "^ids:" "$out/cost-on.txt" | tee -a "$out/cost-ids.txt"
done
line=$(python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = {k: statistics.median(float(r["ns_per_call"]) for r in rows if r["recorder"] == k)
     for k in ("off", "on")}
print("10,000 communicators: all-reduce %.1f ns off, %.1f ns on: +%.1f ns per call"
      % (m["off"], m["on"], m["on"] - m["off"]))
PY
)
say "per comm: $line; ids $ids"
[ "$ids" = ok ]
