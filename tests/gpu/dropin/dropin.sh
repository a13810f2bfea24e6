#!/usr/bin/env bash
# The drop-in on the GPU host, from the repository root:
#   bash tests/gpu/dropin/dropin.sh
# Steps, each independent of the others' outcome (a failure is reported and the next runs):
#   build      ncclshim (build-gpu/), the hang program three ways, collectives direct
#   hang       two processes, one H200 each, the recorder on: rank 1 stops issuing all-reduces
#              after 5, rank 0 issues a 6th and blocks; the dump signal (USR1) makes both dump;
#              ncclshim-record-compare must name rank 1 and seq 6. Three ways: linked to the
#              drop-in; LD_PRELOAD over the program linked to the system NCCL (2.28.3); the
#              same over the pip wheel's NCCL (2.28.9)
#   preload    bench/gpu/collectives.c linked to the real NCCL, run under LD_PRELOAD of the
#              drop-in with NCCLSHIM_DEBUG=1 (must say "interposing", results checked)
#   torch      torch.distributed all-reduce, 2 processes (torch.distributed.run), under
#              LD_PRELOAD, the recorder on at exit; then the compare command on its dumps
# Logs in ${OUT:-/tmp/out}/dropin/; a summary at the end. NVLink multicast stays off. The
# recorder's cost per call is a measurement: bench/gpu/recorder.sh.
# Under 6 minutes: every GPU step has a timeout.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" dropin
dropin=$PWD/$build/src/dropin/libncclshim-nccl.so.0
compare=src/dropin/ncclshim-record-compare
summary=()
note() { summary+=("$(printf '%-28s %s' "$1" "$2")"); echo "=== $1: $2"; }

step_build() {
  part_build || { note build FAILED; return 1; }
  local cc=(gcc -std=c11 -O2 -Wall -Wextra -Werror -Itests/support "-I$cuda/include")
  local cudart=("-L$cuda/lib64" -lcudart "-Wl,-rpath,$cuda/lib64")
  local ok=1
  "${cc[@]}" -I"$sys_include" tests/gpu/dropin/stop_rank.c -o "$out/stop-linked" \
    -L"$build/src/dropin" -lncclshim-nccl -Wl,-rpath,"$PWD/$build/src/dropin" "${cudart[@]}" || ok=0
  "${cc[@]}" -I"$sys_include" tests/gpu/dropin/stop_rank.c -o "$out/stop-sys" "$sys_nccl" \
    "${cudart[@]}" || ok=0
  "${cc[@]}" -I"$pip_root/include" tests/gpu/dropin/stop_rank.c -o "$out/stop-pip" "$pip_nccl" \
    -Wl,-rpath,"$pip_root/lib" "${cudart[@]}" || ok=0
  "${cc[@]}" -I"$sys_include" bench/gpu/collectives.c -o "$out/collectives-sys" "$sys_nccl" \
    "${cudart[@]}" || ok=0
  for p in stop-linked stop-sys stop-pip collectives-sys; do
    echo "$p NEEDED: $(readelf -d "$out/$p" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  done | tee "$out/needed.txt"
  echo "drop-in NEEDED: $(readelf -d "$dropin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')" |
    tee -a "$out/needed.txt"
  if [ $ok = 1 ]; then note build ok; else note build "FAILED (a program)"; fi
}

# hang NAME PROGRAM [LD_PRELOAD]: rank 1 stops after 5 all-reduces.
hang() {
  local name=$1 program=$2 preload=${3:-}
  local dir="$out/hang-$name"
  rm -rf "$dir" && mkdir -p "$dir"
  [ -x "$program" ] || { note "hang $name" "SKIPPED (not built)"; return; }
  env ${preload:+LD_PRELOAD=$preload} NCCLSHIM_DEBUG=1 NCCLSHIM_RECORD=1000 \
    NCCLSHIM_RECORD_DIR="$dir" NCCLSHIM_RECORD_SIGNAL=USR1 \
    timeout -k 5 90 "$program" 1 5 10 >"$dir/run.log" 2>&1 # 10 = SIGUSR1
  local rc=$?
  python3 $compare "$dir" >"$dir/compare.txt" 2>&1
  local crc=$?
  cat "$dir/compare.txt"
  if [ $rc -eq 77 ]; then
    note "hang $name" "SKIPPED (fewer than 2 GPUs)"
  elif [ $rc -eq 0 ] && [ $crc -eq 1 ] &&
    grep -q "^verdict: rank 1 is behind on communicator [0-9a-f]* at seq 6: it stopped after seq 5" \
      "$dir/compare.txt"; then
    note "hang $name" "ok: compare names rank 1, seq 6"
  else
    tail -20 "$dir/run.log"
    note "hang $name" "FAILED (program exit $rc, compare exit $crc)"
  fi
}

step_preload() {
  local dir="$out/preload"
  mkdir -p "$dir"
  [ -x "$out/collectives-sys" ] || { note preload "SKIPPED (not built)"; return; }
  LD_PRELOAD=$dropin NCCLSHIM_DEBUG=1 NCCLSHIM_RECORD=100000 NCCLSHIM_RECORD_DIR="$dir" \
    NCCLSHIM_RECORD_AT_EXIT=1 timeout -k 5 120 "$out/collectives-sys" preload $((64 << 20)) \
    >"$dir/collectives.csv" 2>"$dir/collectives.log"
  local rc=$?
  grep -v '^ncclshim: \[' "$dir/collectives.log" | head -20
  local calls
  calls=$(cat "$dir"/ncclshim-record-*.jsonl 2>/dev/null | grep -c '"kind":"call"')
  if [ $rc -eq 0 ] && ! grep -q FAIL "$dir/collectives.log" "$dir/collectives.csv" &&
    grep -q "ncclshim drop-in: interposing: NCCL 2.28.3 from" "$dir/collectives.log"; then
    note preload "ok: collectives correct, interposing, $calls calls recorded"
  else
    note preload "FAILED (exit $rc)"
  fi
}

step_torch() {
  local dir="$out/torch"
  mkdir -p "$dir"
  [ -x "$python" ] || { note torch "SKIPPED (no $python)"; return; }
  LD_PRELOAD=$dropin NCCLSHIM_DEBUG=1 NCCLSHIM_RECORD=10000 NCCLSHIM_RECORD_DIR="$dir" \
    NCCLSHIM_RECORD_AT_EXIT=1 timeout -k 5 150 "$python" -m torch.distributed.run \
    --nproc-per-node 2 tests/gpu/dropin/torch_allreduce.py >"$dir/run.log" 2>&1
  local rc=$?
  grep -E "all-reduce ok|interposing|forwarding|warning|Error|error" "$dir/run.log" | head -20
  python3 $compare "$dir" >"$dir/compare.txt" 2>&1
  local crc=$?
  cat "$dir/compare.txt"
  local ok_ranks interposing
  # The ranks print at once: their lines can share one line of the log.
  ok_ranks=$(grep -o "rank [0-9]*: all-reduce ok" "$dir/run.log" | sort -u | wc -l)
  interposing=$(grep -c "ncclshim drop-in: interposing" "$dir/run.log")
  if [ $rc -eq 0 ] && [ "$ok_ranks" = 2 ] && [ "$interposing" -ge 2 ] &&
    [ "$(cat "$dir"/ncclshim-record-*.jsonl | grep -c '"function":"ncclAllReduce"')" -ge 40 ]; then
    note torch "ok: 2 ranks correct, interposing in $interposing processes, compare exit $crc"
  else
    tail -30 "$dir/run.log"
    note torch "FAILED (exit $rc, $ok_ranks ranks ok, interposing $interposing)"
  fi
}

{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv; ls -l "$sys_nccl" "$pip_nccl"; } \
  >"$out/machine.txt" 2>&1
# STEPS="build torch" runs those alone (a rerun); all by default. hang and torch need two
# GPUs: with fewer they are skipped, saying so.
steps=" ${STEPS:-build hang preload torch} "
want() { [[ $steps == *" $1 "* ]]; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
two_gpus() { [ "$gpus" -ge 2 ] || { note "$1" "skipped: needs 2 GPUs, this host has $gpus"; false; }; }
want build && step_build
if want hang && two_gpus hang; then
  hang linked "$out/stop-linked"
  hang preload-sys "$out/stop-sys" "$dropin"
  hang preload-pip "$out/stop-pip" "$dropin"
fi
want preload && step_preload
want torch && two_gpus torch && step_torch
echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
