#!/usr/bin/env bash
# The flight recorder on the GPU host with no signal sent, from the repository root:
#   bash tests/gpu/dropin/recorder.sh
# Each run is a 2-GPU job in which rank 1 stops issuing collectives; the job ends by itself
# (a watchdog's ncclCommAbort then abort(); an exit), the recorder dumps on the abort, on
# SIGABRT, at exit, and on a launcher's SIGTERM should one come (NCCLSHIM_RECORD_SIGNAL=TERM;
# nothing is sent by this script), and ncclshim-record-compare must say "rank 1 is behind"
# (exit 1):
#   torch-preload-pip   tests/gpu/dropin/torch_allreduce.py under torch.distributed.run, the
#                       drop-in in LD_PRELOAD, rank 1 skipping the last all-reduce and leaving,
#                       PyTorch's
#                       NCCL timeout 15 s (its watchdog aborts rank 0: TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
#                       ncclCommAbort then abort()); torch's own NCCL (pip 2.28.9)
#   torch-audit-pip     the same under audit mode (LD_AUDIT=the drop-in)
#   ctypes-audit-pip    tests/gpu/dropin/ctypes_allreduce.py (ctypes binding as vLLM's pynccl,
#                       cudart by ctypes), audit mode, each rank's own watchdog (12 s); pip 2.28.9
#   ctypes-audit-sys    the same on the system NCCL (2.28.3)
#   torch-preload-sys   the torch job with the system NCCL preloaded too (only when the run is
#                       under 170 s so far, to stay within 4 minutes)
# Logs, dumps and verdicts in ${OUT:-/tmp/out}/recorder/<run>/; a summary at the end. The
# recorder's cost (per call, over 10,000 communicators) is a measurement: bench/gpu/recorder.sh.
# About 3.5 minutes; every job has a timeout. NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" recorder
part_needs_gpus 2
cudart=$(find "$cuda/lib64/" -maxdepth 1 -name 'libcudart.so*' 2>/dev/null | sort | head -1)
dropin=$PWD/$build/src/dropin/libncclshim-nccl.so.0
compare=$PWD/src/dropin/ncclshim-record-compare
summary=()
note() { summary+=("$(printf '%-20s %s' "$1" "$2")"); echo "=== $1: $2 ($((SECONDS - start)) s)"; }

step_build() {
  part_build || { note build FAILED; return 1; }
  note build ok
}

# verdict NAME DIR RC EXPECTED RC_OK: the compare command on DIR must name rank 1 behind,
# and the job's exit status RC must be as EXPECTED (RC_OK 1).
verdict() {
  local name=$1 dir=$2 rc=$3 expected=$4 rc_ok=$5
  python3 "$compare" "$dir" >"$dir/compare.txt" 2>&1
  local crc=$?
  grep -E "^(verdict|  rank|communicator)" "$dir/compare.txt" | head -8
  local dumps
  dumps=$(find "$dir" -maxdepth 1 -name 'ncclshim-record-*.jsonl' | wc -l)
  if [ "$rc" = 77 ]; then
    note "$name" "SKIPPED (fewer than 2 GPUs)"
  elif [ "$rc_ok" = 1 ] && [ $crc -eq 1 ] && grep -q "^verdict: rank 1 is behind on communicator [0-9a-f]* at seq" \
    "$dir/compare.txt" && ! grep -q "ncclshim-record-compare" "$dir/compare.txt"; then
    note "$name" "ok: $(grep -o 'rank 1 is behind on communicator [0-9a-f]* at seq [0-9]*' \
      "$dir/compare.txt" | head -1) (job exit $rc, $dumps dumps, no signal sent)"
  else
    tail -25 "$dir/run.log"
    note "$name" "FAILED (job exit $rc, expected $expected; compare exit $crc; $dumps dumps)"
  fi
}

# Sets rec_env: the recorder's environment, dumps into DIR.
recorder_env() {
  rec_env=(NCCLSHIM_DEBUG=1 NCCLSHIM_RECORD=10000 "NCCLSHIM_RECORD_DIR=$1"
    NCCLSHIM_RECORD_SIGNAL=TERM NCCLSHIM_RECORD_AT_EXIT=1)
}

# torch NAME MODE(preload|audit) [EXTRA_PRELOAD]
torch_run() {
  local name=$1 mode=$2 extra=${3:-} dir="$out/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  [ -x "$python" ] || { note "$name" "SKIPPED (no $python)"; return; }
  [ -f "$dropin" ] || { note "$name" "SKIPPED (not built)"; return; }
  local how=("LD_PRELOAD=$dropin${extra:+:$extra}")
  if [ "$mode" = audit ]; then
    how=("LD_AUDIT=$dropin")
    [ -n "$extra" ] && how+=("LD_PRELOAD=$extra")
  fi
  recorder_env "$dir"
  env "${how[@]}" "${rec_env[@]}" SKIP_RANK=1 NCCL_TIMEOUT_S=15 \
    TORCH_NCCL_ASYNC_ERROR_HANDLING=1 timeout -k 5 100 "$python" -m torch.distributed.run \
    --nproc-per-node 2 tests/gpu/dropin/torch_allreduce.py >"$dir/run.log" 2>&1
  local rc=$?
  grep -E "skipping|leaving|interposing|audit mode|Watchdog|timed out|wrote|warning" "$dir/run.log" |
    cut -c1-200 | head -12
  local rc_ok=0
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && rc_ok=1 # ended by itself, with an error
  verdict "$name" "$dir" $rc "non-zero, not a timeout (rank 0 aborted by its watchdog)" $rc_ok
}

# ctypes NAME LIBNCCL
ctypes_run() {
  local name=$1 nccl=$2 dir="$out/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  [ -x "$python" ] || { note "$name" "SKIPPED (no $python)"; return; }
  if [ ! -f "$nccl" ] || [ -z "$cudart" ]; then
    note "$name" "SKIPPED (no $nccl or cudart)"
    return
  fi
  recorder_env "$dir"
  env LD_AUDIT="$dropin" "${rec_env[@]}" timeout -k 5 80 "$python" \
    tests/gpu/dropin/ctypes_allreduce.py --nccl "$nccl" --cudart "$cudart" --stop-rank 1 \
    --stop-after 5 --timeout 12 >"$dir/run.log" 2>&1
  local rc=$?
  grep -E "stopped|waiting|watchdog|launcher|audit mode|wrote|warning" "$dir/run.log" |
    cut -c1-200 | head -12
  local rc_ok=0
  [ $rc -eq 0 ] && rc_ok=1
  verdict "$name" "$dir" $rc "0 (both ranks ended by their watchdog's abort())" $rc_ok
}

{ date -u; nvidia-smi --query-gpu=index,name,driver_version --format=csv; ls -l "$sys_nccl" "$pip_nccl";
  ldd --version | head -1; } >"$out/machine.txt" 2>&1
steps=" ${STEPS:-build torch ctypes} "
want() { [[ $steps == *" $1 "* ]]; }
want build && step_build
if want torch; then
  torch_run torch-preload-pip preload
  torch_run torch-audit-pip audit
fi
if want ctypes; then
  ctypes_run ctypes-audit-pip "$pip_nccl"
  ctypes_run ctypes-audit-sys "$sys_nccl"
fi
if want torch && [ $((SECONDS - start)) -lt 170 ]; then
  torch_run torch-preload-sys preload "$sys_nccl"
fi
echo "=== summary ($((SECONDS - start)) s)"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
