#!/usr/bin/env bash
# Every measurement on the GPU host, in one command from the repository root:
#   [STAGES="collectives allreduce init fingerprint driverfacts percall recordcost recorder"] \
#     bash bench/gpu/run.sh \
#     [MAX_ALLREDUCE_BYTES]
# Builds ncclshim there (build-gpu/, or $BUILD), then runs each stage (all by default):
#   collectives  the plain-NCCL collectives program linked directly and through the drop-in
#   allreduce    the all-reduce benchmark (direct, drop-in, table), one process per GPU
#   init         NCCL's load and ncclshim's, on both real NCCLs (bench/init_cost)
#   fingerprint  ncclshim_nccl_fingerprint on both real NCCLs (bench/fingerprint_cost; goal:
#                <= 0.1 ms, no bytes read)
#   driverfacts  what the driver answers a look that queries an event recorded in a capture,
#                the capture check's cost, and whether a destroyed stream's handle is reused
#                while its work is pending (bench/gpu/driver_facts.c)
#   percall      host time per all-reduce call with and without hang detection (percall.sh)
#   recordcost   what ncclshim_comm_record costs the enqueueing thread (recordcost.sh)
#   recorder     the flight recorder's cost per call and over many communicators (recorder.sh)
# and leaves logs and CSVs in $OUT (or /tmp/ncclshim-gpu): the first three's in
# gpu-results.tgz, the scripts' in $OUT/<stage>/. NVLink multicast stays off. What decides ok
# or FAIL (the gpu suite, the probe, the acceptance parts) is tests/gpu/run.sh's.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/ncclshim-gpu}
res=/tmp/ncclshim-results
rm -rf "$res" && mkdir -p "$res" "$out"
build=${BUILD:-build-gpu}
max_bytes=${1:-4294967296}
host=h200x2
sys_nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
pip_root=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
pip_nccl=$pip_root/lib/libnccl.so.2
cuda_inc=/usr/local/cuda/include
cuda_lib=/usr/local/cuda/lib64
# Each step ends by saving what exists so far: a run cut short still returns its results.
save() { tar -C "$res" --exclude='coll-*' --exclude='ar-*' -czf "$out/gpu-results.tgz" .; }
step() {
  save
  echo "=== $* ($(date -u +%T))"
}
stages=${STAGES:-collectives allreduce init fingerprint driverfacts percall recordcost recorder}
want() { [[ " $stages " == *" $1 "* ]]; }
nccl_lib() { [ "$1" = sys ] && echo $sys_nccl || echo $pip_nccl; }
# build SOURCE OUTPUT direct|dropin|table sys|pip: a plain NCCL program against that NCCL's
# nccl.h, linked with its libnccl, with the drop-in, or calling through ncclshim's table.
build() {
  local lib inc
  lib=$(nccl_lib "$4")
  inc=$([ "$4" = sys ] && echo /usr/include || echo "$pip_root/include")
  local cc=(gcc -std=c11 -O2 -Wall -Wextra -Werror -Itests/support "-I$cuda_inc" -I"$inc" "$1" -o "$2")
  local cudart=("-L$cuda_lib" -lcudart "-Wl,-rpath,$cuda_lib")
  case $3 in
  direct) "${cc[@]}" "$lib" -Wl,-rpath,"$(dirname "$lib")" "${cudart[@]}" ;;
  dropin) "${cc[@]}" "-L$build/src/dropin" -lncclshim-nccl -Wl,-rpath,"$PWD/$build/src/dropin" "${cudart[@]}" ;;
  table) "${cc[@]}" -DVIA_TABLE -Iinclude "-L$build/src" -lncclshim -Wl,-rpath,"$PWD/$build/src" "${cudart[@]}" ;;
  esac
}

step machine
{
  date -u
  uname -r
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id,compute_cap,uuid --format=csv
  nvidia-smi topo -m
  ls -l $sys_nccl $pip_nccl
  gcc --version | head -1
  meson --version
} >"$res/machine.txt" 2>&1
head -5 "$res/machine.txt"

step build
if ! { { [ -f "$build/build.ninja" ] || meson setup "$build"; } && ninja -C "$build"; } >"$res/build.log" 2>&1; then
  tail -40 "$res/build.log"
  exit 1
fi

if want collectives; then
step "collectives: direct and drop-in"
for which in sys pip; do
  for v in direct dropin; do
    build bench/gpu/collectives.c "$res/coll-$v-$which" $v $which
    echo "--- coll-$v-$which NEEDED: $(readelf -d "$res/coll-$v-$which" | sed -n 's/.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  done
done | tee "$res/collectives-needed.txt"
echo "variant,nccl,op,bytes,us,busbw_GBps,us_min,us_max" >"$res/collectives-$host.csv"
for _ in 1 2; do
  for which in sys pip; do
    lib=$(nccl_lib $which)
    "$res/coll-direct-$which" direct $((256 << 20)) >>"$res/collectives-$host.csv" 2>>"$res/collectives.log"
    NCCLSHIM_NCCL_LIBRARY=$lib "$res/coll-dropin-$which" dropin $((256 << 20)) \
      >>"$res/collectives-$host.csv" 2>>"$res/collectives.log"
  done
done
cat "$res/collectives.log"
fi

if want allreduce; then
step "all-reduce benchmark, one process per GPU"
for which in sys pip; do
  for v in direct dropin table; do build bench/gpu/allreduce_bench.c "$res/ar-$v-$which" $v $which; done
done
echo "variant,nccl,bytes,us,busbw_GBps,us_min,us_max" >"$res/allreduce-$host.csv"
# Small messages vary from process to process (launch-bound): more rounds, interleaved.
run_ar() { # ROUNDS MIN MAX
  for _ in $(seq 1 "$1"); do
    for which in sys pip; do
      lib=$(nccl_lib $which)
      for v in direct dropin table; do
        NCCLSHIM_NCCL_LIBRARY=$lib timeout 300 "$res/ar-$v-$which" $v "$2" "$3" \
          >>"$res/allreduce-$host.csv" 2>>"$res/allreduce.log" || echo "ar-$v-$which failed: $?"
      done
    done
  done
}
run_ar "${SMALL_ROUNDS:-6}" 8 $((1 << 20))
run_ar "${LARGE_ROUNDS:-2}" $((2 << 20)) "$max_bytes"
tail -5 "$res/allreduce.log"
fi

if want init; then
step "init cost on the real NCCLs"
echo "way,library,us" >"$res/init-cost-$host.csv"
for lib in $sys_nccl $pip_nccl; do
  for _ in $(seq 1 "${INIT_REPS:-40}"); do
    "$build/bench/init_cost" raw "$lib" 2>/dev/null >>"$res/init-cost-$host.csv"
    "$build/bench/init_cost" shim "$lib" 2>>"$res/init-cuinit.log" >>"$res/init-cost-$host.csv"
  done
done
sort -u "$res/init-cuinit.log"
fi

if want fingerprint; then
step "fingerprint cost on the real NCCLs"
for which in sys pip; do
  {
    echo "way,library,handle,us,bytes_read,minor_faults,major_faults"
    timeout 120 "$build/bench/fingerprint_cost" "$(nccl_lib $which)" 30 2>"$res/fingerprint-$which.txt"
  } >"$res/fingerprint-cost-$which-$host.csv"
  echo "fingerprint on $which: exit $?; $(tail -n +2 "$res/fingerprint-cost-$which-$host.csv" | wc -l) rows"
done
fi

if want driverfacts; then
step "driver facts"
gcc -std=c11 -O2 -Wall -Wextra -Werror "-I$cuda_inc" bench/gpu/driver_facts.c -o "$res/driver_facts" \
  -L"$cuda_lib/stubs" -lcuda -lpthread &&
  timeout 120 "$res/driver_facts" >"$res/driver-facts-$host.csv" 2>"$res/driver-facts.log"
echo "driver facts: exit $?"
grep -E '^(facts|handle)' "$res/driver-facts-$host.csv"
fi

# The measurements with a script of their own (sourcing tests/gpu/part_common.sh), each in
# $OUT/<stage>/ under its own time limit (LIMIT_<stage>, else PART_LIMIT_S, 300 s).
for script in percall recordcost recorder; do
  want $script || continue
  step "$script"
  limit=LIMIT_$script
  OUT=$out BUILD=$build timeout "${!limit:-${PART_LIMIT_S:-300}}" bash "bench/gpu/$script.sh" 2>&1 |
    tail -25
done

step summary
python3 bench/summarize.py "$res" "$host" | tee "$res/summary.txt"
save
step "done"
