#!/usr/bin/env bash
# The watchdog and CUDA graphs on one GPU, a part of tests/gpu/run.sh
# (PARTS=graphs), or from the repository root: bash tests/gpu/comm/graphs.sh
# Builds (or reuses) build-gpu/, compiles tests/gpu/comm/graphs.cu with nvcc against it, then runs
# its cases (one-rank communicators, deadline 300 ms, interval 10 ms) on the NCCL that
# NCCLSHIM_NCCL_LIBRARY names, or when it is unset on the system NCCL ($SYS_NCCL, 2.28.3 on
# the GPU host) and on $NCCL_2297 when given, each with the gpu suite's gpu-watchdog-graphs
# (row suite-gpu-watchdog-graphs); and capture-torch (tests/gpu/comm/graphs_torch.py) once,
# through torch.cuda.graph on the NCCL torch loads ($PIP_NCCL), since two NCCLs in one
# process are not what a program has. Writes ${OUT:-/tmp/out}/graphs/: graphs.csv
# (case,verdict,nccl,ms,limit_ms,detail; every verdict ok is success; ms is the detection
# time for replay-hang-detected and isolation, limit_ms its bound (deadline + interval)
# * 1.1), summary.txt, a log per run. About 60 s; each run has its own timeout, and none
# runs past BUDGET_S (88 s) from the start (a step with no time left writes a FAIL row).
# NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" graphs 88
summary=$out/summary.txt
: >"$summary"

bin=$build/bench-graphs
part_build && part_compile "$cuda/bin/nvcc" -arch=sm_90 -O2 tests/gpu/comm/graphs.cu -o "$bin" || exit 1

csv=$out/graphs.csv
echo "case,verdict,nccl,ms,limit_ms,detail" >"$csv"
if [ -n "${NCCLSHIM_NCCL_LIBRARY:-}" ]; then
  libs=("$NCCLSHIM_NCCL_LIBRARY")
else
  libs=("$sys_nccl")
  [ -n "${NCCL_2297:-}" ] && libs+=("$NCCL_2297")
fi
for lib in "${libs[@]}"; do
  [ -f "$lib" ] || { say "no $lib: skipped"; continue; }
  log=$out/graphs-$(basename "$(dirname "$lib")").log
  NCCLSHIM_NCCL_LIBRARY=$lib timeout "$(cap 30)" "$bin" >"$log.csv" 2>"$log"
  rc=$?
  say "graphs on $lib: exit $rc"
  [ -s "$log.csv" ] || echo "graphs,FAIL: exit $rc: $(tail -1 "$log" | tr ',' ';'),,0,0," >"$log.csv"
  cat "$log.csv" >>"$csv"
  # The gpu suite's own case (tests/gpu/comm/gpu_graphs.c: driver API, no kernel).
  NCCLSHIM_NCCL_LIBRARY=$lib timeout "$(cap 20)" meson test -C "$build" --no-rebuild \
    gpu-watchdog-graphs >"$log.suite" 2>&1
  rc=$?
  verdict=ok
  [ "$rc" -eq 0 ] || verdict="FAIL: meson test exit $rc (see $(basename "$log.suite"))"
  grep -q "^skip:" "$build/meson-logs/testlog.txt" && verdict="FAIL: skipped"
  detail=$(grep -h "replay-hang-detected" "$build/meson-logs/testlog.txt" | head -1 | tr ',' ';')
  echo "suite-gpu-watchdog-graphs,$verdict,$(tail -1 "$log.csv" | cut -d, -f3),0,0,$detail" >>"$csv"
done
if [ -x "$python" ] && [ -f "$pip_nccl" ]; then
  log=$out/graphs-torch.log
  timeout "$(cap 40)" "$python" tests/gpu/comm/graphs_torch.py "$PWD/$build/src/libncclshim.so" \
    "$pip_nccl" >"$log.csv" 2>"$log"
  say "capture-torch on $pip_nccl: exit $?"
  cat "$log.csv" >>"$csv"
else
  say "capture-torch: no $python or no $pip_nccl: skipped"
  echo "capture-torch,FAIL: no torch venv or no pip NCCL,none,0,0," >>"$csv"
fi
if command -v column >/dev/null; then column -s, -t <"$csv"; else cat "$csv"; fi | cut -c1-160 | tee -a "$summary"
bad=$(tail -n +2 "$csv" | awk -F, '$2 != "ok"' | wc -l)
say "graphs: $(($(wc -l <"$csv") - 1)) rows, $bad not ok, in $((SECONDS - start)) s"
