#!/usr/bin/env bash
# The Rust example on the GPU host, next to the C example: two ranks, all-reduce and broadcast
# of f32 (the Rust one in symmetric memory), sums checked, timed, on the system NCCL and on the
# pip wheel's NCCL. The host has no Rust toolchain: BINARY is examples/allreduce built on a CPU
# machine (cargo build --release --example allreduce). Run from the repository root:
#   bindings/rust/gpu.sh BINARY
# Builds ncclshim with meson into build-gpu/ (or uses the one there), writes every log to
# ${OUT:-/tmp/out}/rust/ and prints a summary. Each run is bounded; one failing does not stop
# the others. NVLink multicast stays off (NCCL_NVLS_ENABLE=0); nothing creates multicast objects.
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: bindings/rust/gpu.sh BINARY (an executable)" >&2
  exit 2
fi
bin=$(realpath "$1")
build=${NCCLSHIM_GPU_BUILD:-build-gpu}
out=${OUT:-/tmp/out}/rust
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

if [ ! -e "$build/src/libncclshim.so.0" ] || [ ! -x "$build/examples/ncclshim-allreduce" ]; then
  { [ -d "$build" ] || meson setup "$build"; } >"$out/meson-setup.log" 2>&1
  ninja -C "$build" >"$out/ninja.log" 2>&1 || note "ninja -C $build failed: see ninja.log"
fi
c_example=$build/examples/ncclshim-allreduce
# The binary was linked on another machine: its libncclshim comes from this build.
LD_LIBRARY_PATH=$(realpath "$build/src")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
ldd "$bin" >"$out/ldd.log" 2>&1
note "rust binary: $bin, libncclshim: $(awk '/libncclshim/ {print $3}' "$out/ldd.log")"
nvidia-smi -L >"$out/gpus.log" 2>&1 && note "GPUs: $(wc -l <"$out/gpus.log")"

pip_nccl=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
start=$SECONDS
# run NAME NCCL_LIBRARY PROGRAM ARGS...: one bounded run, its log, its result lines.
run() {
  local name=$1 library=$2 rc
  shift 2
  if [ $((SECONDS - start)) -gt 300 ]; then
    note "$name: not run (the script's 5-minute budget is spent)"
    return
  fi
  if [ -n "$library" ] && [ ! -e "$library" ]; then
    note "$name: not run ($library is absent)"
    return
  fi
  NCCLSHIM_NCCL_LIBRARY=$library timeout -k 5 45 "$@" >"$out/$name.log" 2>&1
  rc=$?
  note "== $name (exit $rc)"
  grep -E '^rank [0-9]+/|NCCL [0-9]|failed|no GPU|error' "$out/$name.log" | sed 's/^/   /' | tee -a "$summary"
}

for nccl in system pip; do
  library=""
  [ "$nccl" = pip ] && library=$pip_nccl
  for count in 1048576 67108864; do
    args=(--ranks 2 --count "$count" --iters 20 --timeout-ms 20000)
    run "rust-$nccl-$count" "$library" "$bin" "${args[@]}"
    run "c-$nccl-$count" "$library" "$c_example" "${args[@]}"
  done
  run "rust-$nccl-blocking" "$library" "$bin" --ranks 2 --count 1048576 --iters 20 --timeout-ms 20000 --blocking
done
echo "logs in $out; summary in $summary"
