#!/usr/bin/env bash
# The device API on the GPU host (2 GPUs), from the repository root:
#   bash tests/gpu/devapi/devapi.sh [--no-build-nccl]
# For NCCL 2.28.3 (system), 2.28.9 (pip wheel) and 2.29.7 (built from .nccl-src/ in the
# background while the others run; --no-build-nccl or no .nccl-src/ skips it), builds
# tests/gpu/devapi/devapi.cu with nvcc against that release's nccl.h and nccl_device.h three
# ways (through ncclshim's table, through the drop-in, linked directly) and runs each: a device
# communicator with an LSA barrier requirement, the teams queried on the host, a kernel that
# all-reduces through LSA pointers of a symmetric window, the sums checked, everything
# destroyed; on 2.29.7 also ncclCommQueryProperties and ncclGetLsaDevicePointer /
# ncclGetPeerDevicePointer against the library's own answers. Logs in $OUT/devapi/ (OUT
# defaults to /tmp/out), one summary line per run at the end. Each step is independent: one
# failure does not hide the others. NVLink multicast stays off; no multicast object is made.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" devapi
part_needs_gpus 2
build_nccl=1
[ "${1:-}" = --no-build-nccl ] && build_nccl=0
nvcc=${NVCC:-$cuda/bin/nvcc}
nccl_build_dir=/tmp/ncclshim-nccl-src
bin=/tmp/ncclshim-devapi-bin # the programs: outside $OUT, which keeps only logs
mkdir -p "$bin"
summary=()
note() {
  summary+=("$*")
  echo "$*"
}

# NCCL 2.29.7 from source, in the background (about 3 minutes on 32 cores).
if [ $build_nccl = 1 ] && [ -f .nccl-src/build.sh ]; then
  mkdir -p "$nccl_build_dir"
  (bash .nccl-src/build.sh 2.29.7 "$nccl_build_dir" >"$out/nccl-2.29.7-build.txt" 2>&1
    cp "$nccl_build_dir/nccl-2.29.7.build.log" "$out/" 2>/dev/null) &
  nccl_pid=$!
else
  nccl_pid=
  note "2.29.7: not built ($([ $build_nccl = 0 ] && echo --no-build-nccl || echo 'no .nccl-src/build.sh'))"
fi

{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv
  "$nvcc" --version | tail -2
} >"$out/machine.txt" 2>&1

# ncclshim itself: the library, the drop-in and the probe.
part_build || note "ncclshim: build FAILED (build.log)"

# run_release NAME LIBRARY INCLUDE_DIR: build and run the three ways.
run_release() {
  local name=$1 lib=$2 inc=$3 way
  if [ ! -f "$lib" ] || [ ! -f "$inc/nccl_device.h" ]; then
    note "$name: skipped (no $lib or no $inc/nccl_device.h)"
    return
  fi
  "$build/src/probe/ncclshim-probe" --no-devices --library "$lib" >"$out/probe-$name.txt" 2>&1
  for way in table dropin direct; do
    local exe="$bin/devapi-$name-$way" log="$out/devapi-$name-$way.log"
    # GIN's GDAKI transport is not used: leave out its headers (doca), which some installs lack.
    local flags=(-std=c++17 -O2 -arch=sm_90 -DNCCL_GIN_GDAKI_ENABLE=0 -Iinclude
      tests/gpu/devapi/devapi.cu -o "$exe" -ldl -lpthread)
    # /usr/include is searched already; naming it again (-isystem) reorders the C++ headers'
    # #include_next <math.h> past it, and the build fails.
    [ "$inc" = /usr/include ] || flags+=(-isystem "$inc")
    case $way in
    table) flags+=(-DVIA_TABLE "-L$build/src" -lncclshim -Xlinker -rpath="$PWD/$build/src") ;;
    dropin) flags+=(-DVIA_DROPIN "-L$build/src/dropin" -lncclshim-nccl
      -Xlinker -rpath="$PWD/$build/src/dropin:$PWD/$build/src") ;;
    direct) flags+=(-Xlinker "$lib" -Xlinker -rpath="$(dirname "$lib")") ;;
    esac
    if ! "$nvcc" "${flags[@]}" >"$log" 2>&1; then
      note "$name $way: build FAILED ($(basename "$log"))"
      continue
    fi
    NCCLSHIM_NCCL_LIBRARY=$lib timeout 120 "$exe" >>"$log" 2>&1
    local rc=$?
    note "$name $way: $([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)") - $(grep -E '^(PASS|FAIL|SKIP)' "$log" | tail -1)"
  done
  if grep -q '^rank0_teams=' "$out/devapi-$name-direct.log" 2>/dev/null; then
    # The host answers that do not depend on the process: the same three ways.
    local way2
    for way2 in table dropin; do
      if diff <(grep -E '^rank[01]_(teams|properties)=' "$out/devapi-$name-direct.log" | sort) \
        <(grep -E '^rank[01]_(teams|properties)=' "$out/devapi-$name-$way2.log" | sort) >/dev/null 2>&1; then
        note "$name $way2: teams and properties as the direct build's"
      else
        note "$name $way2: teams or properties DIFFER from the direct build's"
      fi
    done
  fi
}

run_release 2.28.3 "$sys_nccl" "$sys_include"
run_release 2.28.9 "$pip_nccl" "$pip_root/include"
if [ -n "$nccl_pid" ]; then
  if wait "$nccl_pid" && [ -f "$nccl_build_dir/nccl-2.29.7/build/lib/libnccl.so.2" ]; then
    run_release 2.29.7 "$nccl_build_dir/nccl-2.29.7/build/lib/libnccl.so.2" \
      "$nccl_build_dir/nccl-2.29.7/build/include"
  else
    note "2.29.7: build FAILED ($(tail -3 "$out/nccl-2.29.7-build.txt" | tr '\n' ' '))"
  fi
fi

echo "=== summary (logs in $out)"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
! grep -qE 'FAIL|DIFFER' "$out/summary.txt"
