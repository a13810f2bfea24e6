#!/usr/bin/env bash
# The recorder's hang dump on one GPU, with no signal sent, a part of tests/gpu/run.sh
# (PARTS=hangdump; it builds build-gpu/ first), or alone from the repository root:
#   bash tests/gpu/dropin/hangdump.sh
# A one-rank job holds its stream with a kernel that spins on a host-mapped flag (it gives up
# by itself after 4 s), then issues an all-reduce behind it (tests/gpu/dropin/hang_job.c,
# hang_job.py). With NCCLSHIM_RECORD_HANG_MS=500 the recorder must dump by itself, once, with
# reason "hang" and one stderr line, and ncclshim-record-compare must name the stuck call:
#   hang-preload-sys     hang_job linked to the system NCCL, the drop-in in LD_PRELOAD
#   hang-preload-pip     the same on the pip NCCL
#   hang-link            hang_job linked to the drop-in, NCCLSHIM_NCCL_LIBRARY=system NCCL
#   hang-audit-ctypes    hang_job.py (NCCL by ctypes, as vLLM's pynccl) under LD_AUDIT, pip NCCL
#   hang-audit-preload   hang-preload-sys with LD_AUDIT as well: one dump, each call once
#   hang-off             hang-preload-sys without NCCLSHIM_RECORD_HANG_MS: no dump at all
#   capture-c            an all-reduce captured into a CUDA graph (global mode) and replayed 3
#                        times with the hang dump on: the capture works, no hang dump, the exit
#                        dump marks the call "captured", compare says so (exit 3)
#   capture-torch        an all-gather through torch.cuda.graph (tests/gpu/dropin/torch_capture.py)
# What the hang dump adds to a call is the tracker part's hang_call (tests/gpu/track/tracker.sh).
# Writes $OUT/hangdump/summary.csv (case,verdict,detected_ms,detail) and each case's logs,
# dumps and compare output in $OUT/hangdump/<case>/. About 60 s; every job has a timeout.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" hangdump
mkdir -p "$out/bin"
dropin=$PWD/$build/src/dropin/libncclshim-nccl.so.0
compare=$PWD/src/dropin/ncclshim-record-compare
bin=$out/bin
nvcc=${NVCC:-$(command -v nvcc || echo "$cuda/bin/nvcc")}
csv=$out/summary.csv
echo "case,verdict,detected_ms,detail" >"$csv"

row() { # CASE VERDICT DETECTED DETAIL
  echo "$1,$2,$3,\"${4//\"/\'}\"" >>"$csv"
  printf '%-18s %-40s %s\n' "$1" "$2" "${3:+detected ${3} ms}"
}

build_jobs() {
  [ -f "$dropin" ] || meson compile -C "$build" ncclshim-nccl >"$out/build.log" 2>&1
  "$nvcc" -arch=sm_90 -shared -Xcompiler -fPIC tests/gpu/dropin/hang_gpu.cu -o "$bin/libhang_gpu.so" &&
    for target in sys pip link; do
      case $target in
      sys) dir=$(dirname "$sys_nccl") name=libnccl.so.2 ;;
      pip) dir=$(dirname "$pip_nccl") name=libnccl.so.2 ;;
      link) dir=$(dirname "$dropin") name=libncclshim-nccl.so.0 ;;
      esac
      gcc -std=c11 -D_GNU_SOURCE -Iinclude -Itests/dropin tests/gpu/dropin/hang_job.c -o "$bin/hang_job_$target" \
        -L"$bin" -lhang_gpu -L"$dir" -l:"$name" -Xlinker -rpath -Xlinker "$bin" \
        -Xlinker -rpath -Xlinker "$dir" || return 1
    done
} >>"$out/build.log" 2>&1

# check_hang CASE DIR RC: the job's output in DIR/run.log, its dumps in DIR.
check_hang() {
  local name=$1 dir=$2 rc=$3 detected why=""
  detected=$(sed -n 's/^detected_ms=//p' "$dir/run.log" | tail -1)
  python3 "$compare" "$dir" >"$dir/compare.txt" 2>&1
  local crc=$?
  local lines dumps line first last
  # The stuck all-reduce is #3: named alone, or within the operations that shared its event
  # ("#2 or one of the 1 after it on that stream (one event)").
  line=$(grep "^ncclshim recorder: wrote .*(hang: ncclAllReduce #.* not complete after 500 ms)" "$dir/run.log")
  lines=$(grep -c . <<<"$line")
  read -r first last <<<"$(hang_range "$line")"
  [ "$first" != "?" ] && [ "$first" -le 3 ] && [ "$last" -ge 3 ] || why+="stderr names #$first-#$last, not #3; "
  dumps=$(find "$dir" -maxdepth 1 -name 'ncclshim-record-*.jsonl' | wc -l)
  [ "$rc" = 0 ] || why+="job exit $rc; "
  [ "$dumps" = 1 ] || why+="$dumps dumps; "
  grep -q '"reason":"hang","function":"ncclAllReduce","hang_ms":500,"stuck_call":' "$dir"/ncclshim-record-*.jsonl 2>/dev/null ||
    why+="no hang header; "
  [ "$lines" = 1 ] || why+="$lines stderr lines; "
  [ $crc = 1 ] && grep -q "hung: ncclAllReduce .* at seq ${first}[ ].*has not completed after 500 ms" "$dir/compare.txt" ||
    why+="compare exit $crc without the stuck call; "
  [ -n "$detected" ] && [ "${detected%.*}" -ge 500 ] 2>/dev/null && [ "${detected%.*}" -le 1500 ] ||
    why+="detected after ${detected:-?} ms (500-1500 wanted); "
  grep -q "^gave_up=0" "$dir/run.log" || why+="the kernel hit its own limit; "
  if [ -z "$why" ]; then
    row "$name" ok "$detected" "$(grep -m1 "hung:" "$dir/compare.txt")"
  else
    tail -15 "$dir/run.log"
    row "$name" "FAIL: ${why%; }" "$detected" "$(grep -m1 verdict "$dir/compare.txt")"
  fi
}

# run_case CASE SECONDS ENV... -- COMMAND...: DIR=$out/CASE gets run.log and the dumps.
run_case() {
  local name=$1 limit=$2
  shift 2
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  local dir=$out/$name
  rm -rf "$dir" && mkdir -p "$dir"
  env "${env[@]}" NCCLSHIM_RECORD=1000 NCCLSHIM_RECORD_DIR="$dir" timeout -k 5 "$limit" "$@" \
    >"$dir/run.log" 2>&1
}

hang_case() { # CASE HOW... -- COMMAND (its last argument the dump directory is appended)
  local name=$1
  shift
  run_case "$name" 30 NCCLSHIM_RECORD_HANG_MS=500 "$@" "$out/$name"
  local rc=$?
  [ $rc = 77 ] && { row "$name" "ok: skipped, no GPU" "" ""; return; }
  check_hang "$name" "$out/$name" $rc
}

capture_check() { # CASE RC KEY FUNCTION: the capture ran, no hang dump, FUNCTION marked captured
  local name=$1 rc=$2 key=$3 fn=$4 dir=$out/$1 why=""
  python3 "$compare" "$dir" >"$dir/compare.txt" 2>&1
  local crc=$?
  [ "$rc" = 0 ] || why+="job exit $rc; "
  grep -q "^$key" "$dir/run.log" || why+="no $key; "
  grep -q '"reason":"exit"' "$dir"/ncclshim-record-*.jsonl 2>/dev/null || why+="no exit dump; "
  grep -q '"reason":"hang"' "$dir"/ncclshim-record-*.jsonl 2>/dev/null && why+="a hang dump; "
  grep -q "\"function\":\"$fn\".*\"captured\":true" "$dir"/ncclshim-record-*.jsonl 2>/dev/null ||
    why+="no captured $fn; "
  [ $crc = 3 ] && grep -q "captured into a CUDA graph" "$dir/compare.txt" || why+="compare exit $crc; "
  if [ -z "$why" ]; then
    row "$name" ok "" "$(grep -m1 "captured into" "$dir/compare.txt")"
  else
    tail -15 "$dir/run.log"
    row "$name" "FAIL: ${why%; }" "" "$(grep -m1 verdict "$dir/compare.txt")"
  fi
}

if ! nvidia-smi -L >/dev/null 2>&1; then
  row all "ok: skipped, no GPU" "" ""
  exit 0
fi
if ! build_jobs; then
  tail -20 "$out/build.log"
  row build "FAIL: see build.log" "" ""
  exit 1
fi
hang_case hang-preload-sys LD_PRELOAD="$dropin" -- "$bin/hang_job_sys" hang
hang_case hang-preload-pip LD_PRELOAD="$dropin" -- "$bin/hang_job_pip" hang
hang_case hang-link NCCLSHIM_NCCL_LIBRARY="$sys_nccl" -- "$bin/hang_job_link" hang
hang_case hang-audit-preload LD_AUDIT="$dropin" LD_PRELOAD="$dropin" -- "$bin/hang_job_sys" hang
if [ -x "$python" ]; then
  hang_case hang-audit-ctypes LD_AUDIT="$dropin" -- "$python" tests/gpu/dropin/hang_job.py \
    --nccl "$pip_nccl" --gpu "$bin/libhang_gpu.so" --dir
else
  row hang-audit-ctypes "FAIL: no $python" "" ""
fi

run_case hang-off 30 LD_PRELOAD="$dropin" -- "$bin/hang_job_sys" hang "$out/hang-off"
rc=$?
if [ $rc = 0 ] && grep -q "^detected_ms=-1" "$out/hang-off/run.log" &&
  [ -z "$(find "$out/hang-off" -name 'ncclshim-record-*')" ]; then
  row hang-off ok "" "no dump without NCCLSHIM_RECORD_HANG_MS"
else
  row hang-off "FAIL: exit $rc or a dump" "" ""
fi

run_case capture-c 30 LD_PRELOAD="$dropin" NCCLSHIM_RECORD_HANG_MS=500 NCCLSHIM_RECORD_AT_EXIT=1 \
  -- "$bin/hang_job_sys" capture "$out/capture-c"
capture_check capture-c $? "capture_result=0" ncclAllReduce
# The torch case last, only while the part is within its 90 s (torch takes 15-30 s to start).
if [ -x "$python" ] && [ $((SECONDS - start)) -lt 55 ]; then
  run_case capture-torch 35 LD_PRELOAD="$dropin" NCCLSHIM_RECORD_HANG_MS=500 \
    NCCLSHIM_RECORD_AT_EXIT=1 -- "$python" tests/gpu/dropin/torch_capture.py
  capture_check capture-torch $? "capture=ok" ncclAllGather
else
  row capture-torch "FAIL: not run (no $python, or $((SECONDS - start)) s used)" "" ""
fi
echo "hangdump: $(grep -c ',ok' "$csv") ok of $(($(wc -l <"$csv") - 1)) in $((SECONDS - start)) s" |
  tee "$out/summary.txt"
