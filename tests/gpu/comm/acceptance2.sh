#!/usr/bin/env bash
# The acceptance run that one GPU cannot do, on 2 x H200, a part of tests/gpu/run.sh:
#   LIMIT_acceptance2=540 PARTS=acceptance2 bash tests/gpu/run.sh
# or alone from the repository root (it builds build-gpu/ when tests/gpu/run.sh has not):
#   bash tests/gpu/comm/acceptance2.sh
# Writes ${OUT:-/tmp/out}/acceptance2/acceptance.csv (case,verdict,figures; verdict ok or
# FAIL: why), one row per case, in this order:
#   percall                    bench/gpu/percall.sh (two ranks, one per GPU) on the system
#                              NCCL (2.28.3) and $NCCL_2297: watchdog / blocking and
#                              nonblocking / spin <= 1.05 at every size 8 B .. 1 GiB, each the
#                              median over rounds of one process's ratio
#                              (acceptance2_check.py); its files in percall/
#   graph-replay-stopped-rank  stopped_replay.c on each NCCL: a captured all-reduce replayed
#                              watched (record_graph); rank 1 stops; rank 0's watchdog fails
#                              and aborts within deadline (1000 ms) .. (deadline + 10 ms) * 1.1
#                              and rank 0 exits 0
#   hang-dump-preload          hang2_job.py (ctypes, pip NCCL, functions looked up globally)
#                              under LD_PRELOAD of the drop-in: rank 1 skips the third
#                              all-reduce; NCCLSHIM_RECORD_HANG_MS=500, no signal, no abort;
#                              ncclshim-record-compare names rank 1 and seq 3
#   hang-dump-audit            the same under LD_AUDIT, functions looked up in the library
#   python-two-ranks           python_two.py in the torch venv: ncclshim.Communicator across
#                              two processes, every collective checked, a watched graph
#                              replay, the pynccl-style per-call comparison (<= 1.05)
#   nccl-tests-dropin          NVIDIA's nccl-tests from $NCCL_TESTS_SRC (or .carry/nccl-tests),
#                              built against the drop-in alone and against the system NCCL:
#                              all_reduce_perf and alltoall_perf -b 8 -e 1G -f 2 -g 2, twice
#                              each way, best busbw at each size: drop-in / direct >= 0.99
#                              above 1 MiB, no wrong result
# With fewer than 2 GPUs it is skipped (exit 77), saying so. Each case has its own timeout
# and none starts past BUDGET_S (480) from the start. Exit status 0 when every verdict is ok.
# NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" acceptance2 480
mkdir -p "$out/bin"
dropin=$PWD/$build/src/dropin/libncclshim-nccl.so.0
compare=$PWD/src/dropin/ncclshim-record-compare
nccl_tests_src=${NCCL_TESTS_SRC:-.carry/nccl-tests}
bin=$out/bin
csv=$out/acceptance.csv
cases=(percall graph-replay-stopped-rank hang-dump-preload hang-dump-audit python-two-ranks
  nccl-tests-dropin)
echo "case,verdict,figures" >"$csv"

row() { # CASE VERDICT FIGURES
  echo "$1,${2//,/;},\"${3//\"/\'}\"" >>"$csv"
  printf '%-26s %-50s %s\n' "$1" "${2:0:50}" "${3:0:100}"
}

# ok, or FAIL: and the reasons gathered ("a; b; ").
verdict() { if [ -z "$1" ]; then echo ok; else echo "FAIL: ${1%; }"; fi; }

# The rows in the order above, a FAIL for a case that has none; exit 0 when all are ok.
finish() {
  part_order_rows "$csv" "case,verdict,figures" "" "${cases[@]}"
  local ok
  ok=$(tail -n +2 "$csv" | cut -d, -f2 | grep -c '^ok$')
  echo "acceptance2: $ok ok of ${#cases[@]} in $((SECONDS - start)) s" | tee "$out/summary.txt"
  [ "$ok" = "${#cases[@]}" ]
  exit $?
}

# fail_all WHY: every case FAIL for WHY, and finish.
fail_all() {
  local c
  for c in "${cases[@]}"; do row "$c" "FAIL: $1" ""; done
  finish
}

part_needs_gpus 2
echo "=== build ($(date -u +%T))"
if ! part_build || ! part_compile gcc -std=c11 -O2 -Wall -Wextra -Werror -Itests/support "-I$cuda/include" \
  tests/gpu/comm/stopped_replay.c -o "$bin/stopped_replay" "-L$cuda/lib64" -lcudart \
  "-Wl,-rpath,$cuda/lib64"; then
  fail_all "build (see build.log)"
fi
ncclses=("$sys_nccl")
[ -n "${NCCL_2297:-}" ] && ncclses+=("$NCCL_2297")

# ---- graph-replay-stopped-rank ------------------------------------------------------------
graph_replay() {
  local lib log why="" figures=() rc i=0
  for lib in "${ncclses[@]}"; do
    log=$out/stopped-replay-$((i++))
    NCCLSHIM_NCCL_LIBRARY=$lib timeout -k 5 "$(cap 60)" "$bin/stopped_replay" 1000 \
      >"$log.out" 2>"$log.log"
    rc=$?
    figures+=("$lib: $(tr '\n' ' ' <"$log.out")")
    [ "$rc" = 0 ] || why+="$lib: exit $rc: $(grep -m1 '^rank' "$log.log"); "
  done
  [ -z "${NCCL_2297:-}" ] && why+="no NCCL_2297; "
  row graph-replay-stopped-rank "$(verdict "$why")" "${figures[*]}"
}

# ---- hang-dump-preload, hang-dump-audit ----------------------------------------------------
hang_dump() { # CASE LOOKUP ENV...: both ranks of hang2_job.py, checked
  local name=$1 lookup=$2 dir=$out/$1 r why="" rcs=()
  shift 2
  rm -rf "$dir" && mkdir -p "$dir"
  local pids=()
  for r in 0 1; do
    timeout -k 5 "$(cap 40)" env "$@" PYTHONPATH="$PWD/tests/gpu/python" NCCLSHIM_RECORD=1000 \
      NCCLSHIM_RECORD_DIR="$dir" NCCLSHIM_RECORD_HANG_MS=500 NCCLSHIM_RECORD_AT_EXIT=1 "${HANG_PYTHON:-python3}" \
      tests/gpu/dropin/hang2_job.py --rank "$r" --uid "$dir/uid.bin" --nccl "$pip_nccl" \
      --cudart "$cuda/lib64/libcudart.so" --dir "$dir" --lookup "$lookup" >"$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do
    wait "${pids[$r]}"
    rcs+=($?)
  done
  python3 "$compare" "$dir" >"$dir/compare.txt" 2>&1
  local crc=$? detected dumps
  detected=$(sed -n 's/^detected_ms=//p' "$dir/rank0.log" | tail -1)
  dumps=$(find "$dir" -maxdepth 1 -name 'ncclshim-record-*.jsonl' | wc -l)
  [ "${rcs[*]}" = "0 0" ] || why+="exit statuses ${rcs[*]}; "
  [ "$dumps" = 2 ] || why+="$dumps dumps (2 wanted); "
  grep -q '"reason":"hang".*"stuck_call":' "$dir"/ncclshim-record-*.jsonl 2>/dev/null ||
    why+="no hang dump; "
  [ "$(grep -c '^ncclshim recorder: wrote .*(hang: ncclAllReduce' "$dir/rank0.log")" = 1 ] ||
    why+="not one stderr line of the hang dump; "
  [ $crc = 1 ] && grep -Eq '^verdict: rank 1 is behind on communicator [^ ]+ at seq 3:' \
    "$dir/compare.txt" || why+="compare exit $crc without rank 1 at seq 3; "
  grep -q 'hung: ncclAllReduce .* at seq 3 has not completed after 500 ms' "$dir/compare.txt" ||
    why+="compare does not name the stuck seq 3; "
  [ -n "$detected" ] && [ "${detected%.*}" -ge 500 ] 2>/dev/null &&
    [ "${detected%.*}" -le 1500 ] || why+="detected after ${detected:-?} ms (500-1500 wanted); "
  [ -n "$why" ] && tail -n 5 "$dir/rank0.log" "$dir/rank1.log"
  row "$name" "$(verdict "$why")" \
    "detected ${detected:-?} ms; $(grep -m1 '^verdict' "$dir/compare.txt")"
}

# ---- python-two-ranks ----------------------------------------------------------------------
python_two() {
  if [ ! -x "$python" ]; then
    row python-two-ranks "FAIL: no $python" ""
    return
  fi
  local dir=$out/python-two-ranks limit
  mkdir -p "$dir"
  limit=$(cap 150)
  PYTHONPATH=$PWD/bindings/python:$PWD/tests/gpu/python \
    NCCLSHIM_PYTHON_LIBRARY=$PWD/$build/src/libncclshim.so.0 \
    NCCLSHIM_PYTHON_PROBE=$PWD/$build/src/probe/ncclshim-probe \
    NCCLSHIM_PYTHON_FUNCTIONS=$PWD/$build/bindings/python/_functions.py \
    NCCLSHIM_NCCL_LIBRARY=$pip_nccl PYNCCL_LIBRARY=$pip_nccl PY_TWO_TIMEOUT_S=$((limit - 5)) \
    timeout -k 5 "$limit" "$python" tests/gpu/python/python_two.py "$dir" >"$dir/run.log" 2>&1
  local rc=$? verdict
  verdict=$(sed -n 's/^result=//p' "$dir/run.log")
  [ -n "$verdict" ] || verdict="FAIL: exit $rc: $(tail -1 "$dir/run.log")"
  [ "$verdict" = ok ] || grep -h FAIL "$dir"/rank*.log | head -5
  row python-two-ranks "$verdict" \
    "$(sed -n 's/^rows_ok=//p' "$dir/run.log") rows ok; $(sed -n 's/^percall_rank0=//p' "$dir/run.log")"
}

# ---- percall -------------------------------------------------------------------------------
percall() {
  local left pb
  left=$((budget - (SECONDS - start)))
  pb=$((left - 130 < 240 ? left - 130 : 240))
  if [ -z "${NCCL_2297:-}" ] || [ "$pb" -lt 60 ]; then
    row percall "FAIL: not run (NCCL_2297 '${NCCL_2297:-}', $pb s for it)" ""
    return
  fi
  OUT=$out BUDGET_S=$pb ROUNDS=${PERCALL_ROUNDS:-2} timeout -k 5 $((pb + 15)) \
    bash bench/gpu/percall.sh >"$out/percall.log" 2>&1
  local rc=$? result
  # Cut short, percall.sh has not summarised: its rows so far are.
  [ -f "$out/percall/ratios.md" ] || python3 bench/gpu/percall_summary.py "$out/percall" >/dev/null
  result=$(python3 tests/gpu/comm/acceptance2_check.py percall "$out/percall" 2.28.3 2.29.7)
  [ "$rc" = 0 ] || result="FAIL: percall.sh exit $rc; ${result#ok}"
  row percall "${result%%|*}" "${result#*|}"
}

# ---- nccl-tests-dropin ---------------------------------------------------------------------
nccl_tests() {
  if [ ! -f "$nccl_tests_src/Makefile" ]; then
    row nccl-tests-dropin "FAIL: no nccl-tests source (set NCCL_TESTS_SRC)" ""
    return
  fi
  local d=$out/nccl-tests way home lib pids=() why="" figures=() test rep
  mkdir -p "$d"
  for way in direct dropin; do
    home=$d/home-$way
    mkdir -p "$home/include" "$home/lib"
    ln -sf "$sys_include/nccl.h" "$home/include/nccl.h"
    if [ $way = direct ]; then lib=$sys_nccl; else lib=$dropin; fi
    ln -sf "$lib" "$home/lib/libnccl.so"
    timeout -k 5 "$(cap 180)" make -C "$nccl_tests_src" -j"$(nproc)" MPI=0 CUDA_HOME="$cuda" \
      NCCL_HOME="$home" BUILDDIR="$d/build-$way" \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$d/build-$way.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}" || why+="direct build failed; "
  wait "${pids[1]}" || why+="drop-in build failed; "
  if readelf -d "$d/build-dropin/all_reduce_perf" 2>/dev/null | grep -q 'libnccl\.so'; then
    why+="the drop-in build links libnccl; "
  fi
  if [ -n "$why" ]; then
    tail -n 5 "$d"/build-*.log
    row nccl-tests-dropin "FAIL: ${why%; }" ""
    return
  fi
  for test in all_reduce_perf alltoall_perf; do
    for rep in 1 2; do
      for way in direct dropin; do
        LD_LIBRARY_PATH=$(dirname "$dropin") NCCLSHIM_NCCL_LIBRARY=$sys_nccl \
          timeout -k 5 "$(cap 60)" "$d/build-$way/$test" -b 8 -e 1G -f 2 -g 2 \
          >"$d/$test-$way-$rep.log" 2>&1 || why+="$test $way run $rep: exit $?; "
      done
    done
    local result
    result=$(python3 tests/gpu/comm/acceptance2_check.py nccltests "$d/$test"-direct-*.log -- \
      "$d/$test"-dropin-*.log)
    figures+=("$test: ${result#*|}")
    [ "${result%%|*}" = ok ] || why+="$test: ${result%%|*}; "
  done
  row nccl-tests-dropin "$(verdict "$why")" "${figures[*]}"
}

echo "=== graph-replay-stopped-rank ($(date -u +%T))"
graph_replay
echo "=== hang dumps ($(date -u +%T))"
hang_dump hang-dump-preload global LD_PRELOAD="$dropin" NCCLSHIM_NCCL_LIBRARY="$pip_nccl"
hang_dump hang-dump-audit library LD_AUDIT="$dropin"
echo "=== python-two-ranks ($(date -u +%T))"
python_two
echo "=== percall ($(date -u +%T))"
percall
echo "=== nccl-tests-dropin ($(date -u +%T))"
nccl_tests
finish
