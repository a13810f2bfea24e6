#!/usr/bin/env bash
# The loader's truth on the GPU host, from the repository root:   bash tests/gpu/nccl/truth.sh
# Builds (or reuses) build-gpu/, then, each step on its own (one failing does not stop the
# rest): the torch case as the `gpu` test gpu-torch-census (import torch, then ncclshim in the
# same process reuses the wheel's NCCL; the system NCCL opened explicitly is refused as a
# second copy with the flag, mapped with a warning without), and what ncclshim sees on the
# host and in the venv: the probe (text with the trail, JSON) and every NCCL visible
# (ncclshim_nccl_list_visible through ctypes). The fingerprint's cost on both real NCCLs is a
# measurement: bench/gpu/run.sh (STAGES=fingerprint).
# Logs in $OUT/truth/ (default /tmp/out/truth); a summary at the end. NVLink multicast stays
# off; nothing here creates a communicator. Well under 6 minutes (the build is most of it).
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" truth
venv=$(dirname "$(dirname "$python")")
summary=()
# run NAME COMMAND...: output to $out/NAME.log, outcome to the summary.
run() {
  local name=$1 rc
  shift
  echo "=== $name ($(date -u +%T))"
  timeout 120 "$@" >"$out/$name.log" 2>&1
  rc=$?
  summary+=("$(printf '%-28s %s' "$name" "$(case $rc in 0) echo ok ;; 77) echo skipped ;; *) echo "exit $rc" ;; esac)")")
  tail -4 "$out/$name.log"
}

{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version --format=csv
  ls -l "$sys_nccl" "$pip_nccl"
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  git log --oneline -1
} >"$out/machine.txt" 2>&1

echo "=== build ($(date -u +%T))"
part_build || { echo "build failed: nothing else can run"; exit 1; }
lib=$PWD/$build/src/libncclshim.so
probe=$PWD/$build/src/probe/ncclshim-probe
census=tests/gpu/nccl/gpu_torch_census.py

# 1. The torch case, as meson runs it (suite gpu), and the same script directly, verbose.
run gpu-torch-census-meson meson test -C "$build" --no-rebuild --print-errorlogs gpu-torch-census
run gpu-torch-census python3 $census "$lib"
# 2. The probe: on the host (no venv), in the venv, with the trail, and the JSON of each.
run probe-host env -u VIRTUAL_ENV NCCLSHIM_DEBUG=1 "$probe" -v --no-devices
run probe-host-json env -u VIRTUAL_ENV "$probe" --json --no-devices
run probe-venv env VIRTUAL_ENV="$venv" NCCLSHIM_DEBUG=1 "$probe" -v --no-devices
run probe-venv-json env VIRTUAL_ENV="$venv" "$probe" --json --no-devices
# 3. Every NCCL visible, as the API lists it: host Python, then the venv's with VIRTUAL_ENV.
run visible-host env -u VIRTUAL_ENV python3 $census "$lib" --list
run visible-venv env VIRTUAL_ENV="$venv" "$python" $census "$lib" --list
# 4. A second copy refused through the environment variable (the drop-in's way): the system
#    NCCL named while the wheel's is mapped, in a process of the venv's Python after torch.
run refuse-by-env env NCCLSHIM_NCCL_LIBRARY="$sys_nccl" NCCLSHIM_REFUSE_SECOND_NCCL=1 \
  "$python" -c "
import ctypes, torch
lib = ctypes.CDLL('$lib')
lib.ncclshim_nccl_default.restype = ctypes.c_void_p
lib.ncclshim_nccl_status.argtypes = [ctypes.c_void_p]
lib.ncclshim_nccl_message.argtypes = [ctypes.c_void_p]
lib.ncclshim_nccl_message.restype = ctypes.c_char_p
h = lib.ncclshim_nccl_default()
print(lib.ncclshim_nccl_status(h), lib.ncclshim_nccl_message(h).decode())
raise SystemExit(0 if lib.ncclshim_nccl_status(h) == 17 else 1)"

echo "=== summary (logs in $out)"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
