#!/usr/bin/env bash
# The probe against the GPU host's real NCCLs, a part of tests/gpu/run.sh (PARTS=probe), or
# alone from the repository root: bash tests/gpu/probe/probe.sh
# Builds (or reuses) build-gpu/, then runs ncclshim-probe: its text report (-v) and JSON
# (--json) on the default search, on each NCCL given by --library (system, pip, 2.29.7 when
# NCCL_2297 is set), in the torch venv (VIRTUAL_ENV, --no-devices), and --require 2.28
# --require symmetric-memory on each NCCL. Writes ${OUT:-/tmp/out}/probe/: probe.csv
# (case,verdict: ok when the probe exited 0), summary.txt and each report. Seconds.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" probe
csv=$out/probe.csv
echo "case,verdict" >"$csv"
part_build || { echo "build,FAIL: see build.log" >>"$csv"; exit 1; }
probe=$build/src/probe/ncclshim-probe

# check CASE FILE ARGS...: the probe's output in $out/FILE, its verdict in the CSV.
check() {
  local name=$1 file=$2 rc
  shift 2
  timeout "$(cap 30)" "$@" >"$out/$file" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then echo "$name,ok" >>"$csv"; else echo "$name,FAIL: exit $rc ($file)" >>"$csv"; fi
}

check default-text probe-default.txt "$probe" -v
check default-json probe-default.json "$probe" --json
for which in "${nccls[@]}"; do
  lib=$(nccl_lib "$which")
  check "$which-text" "probe-$which.txt" "$probe" -v --library "$lib"
  check "$which-json" "probe-$which.json" "$probe" --json --library "$lib"
  check "$which-require" "require-$which.txt" "$probe" --library "$lib" --require 2.28 \
    --require symmetric-memory
done
check venv-text probe-venv.txt env VIRTUAL_ENV="$(dirname "$(dirname "$python")")" "$probe" \
  --no-devices -v
head -40 "$out/probe-default.txt"
ok=$(tail -n +2 "$csv" | cut -d, -f2 | grep -c '^ok$')
all=$(($(wc -l <"$csv") - 1))
say "probe: $ok ok of $all in $((SECONDS - start)) s"
column -s, -t <"$csv" | tee -a "$out/summary.txt"
[ "$ok" -eq "$all" ]
