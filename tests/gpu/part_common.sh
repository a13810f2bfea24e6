# shellcheck shell=bash disable=SC2034
# The prologue of every part of tests/gpu/run.sh (tests/gpu/AREA/PART.sh) and of the
# measurements of bench/gpu/run.sh (bench/gpu/PART.sh), sourced first:
#   # shellcheck source=tests/gpu/part_common.sh
#   source "$(dirname "$0")/../part_common.sh" PART [BUDGET]
# Strict about unset names and pipes, not -e: a part runs every step and says how each went.
# It works from the repository root, keeps NVLink multicast off (NCCL, torch, NVSHMEM) and sets
#   out          ${OUT:-/tmp/out}/PART, made (tests/gpu/run.sh gives OUT)
#   start        $SECONDS when the part began
#   budget       BUDGET_S, else BUDGET (90): the seconds the part's steps may use
#   sys_nccl     $SYS_NCCL, else the GPU host's system NCCL (2.28.3); sys_include its nccl.h's
#                folder ($SYS_INCLUDE, /usr/include)
#   pip_nccl     $PIP_NCCL, else the torch venv's pip NCCL (2.28.9); pip_root its wheel's
#                folder (lib/, include/)
#   python       $TORCH_PYTHON, else the torch venv's python
#   cuda         $CUDA, else /usr/local/cuda (nvcc, headers, libcudart)
#   build        the build folder: $BUILD, else build-gpu (the one tests/gpu/run.sh builds)
#   nccls        the NCCLs there are: sys pip, and 2297 when NCCL_2297 is set
# and the functions below.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/out}/${1:?usage: source part_common.sh PART [BUDGET]}
mkdir -p "$out"
start=$SECONDS
budget=${BUDGET_S:-${2:-90}}
sys_nccl=${SYS_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
sys_include=${SYS_INCLUDE:-/usr/include}
pip_nccl=${PIP_NCCL:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}
pip_root=$(dirname "$(dirname "$pip_nccl")")
python=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
cuda=${CUDA:-/usr/local/cuda}
build=${BUILD:-build-gpu}
nccls=(sys pip)
[ -n "${NCCL_2297:-}" ] && nccls+=(2297)

# nccl_lib sys|pip|2297: that NCCL's library (empty for 2297 without NCCL_2297).
nccl_lib() {
  case $1 in sys) echo "$sys_nccl" ;; pip) echo "$pip_nccl" ;; 2297) echo "${NCCL_2297:-}" ;; esac
}

# say TEXT: a line on stdout and at the end of $out/summary.txt.
say() { echo "$*" | tee -a "$out/summary.txt"; }

# part_needs_gpus N: a part whose every case needs N GPUs says so and exits 77 (skipped, not
# failed) on a host with fewer.
part_needs_gpus() {
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  [ "$gpus" -ge "$1" ] && return 0
  say "$(basename "$out"): skipped: needs $1 GPUs, this host has $gpus"
  exit 77
}

# The seconds left of the budget; cap N: a step's timeout, at most N s and never past the
# budget (1 s when none is left, so that the step fails: timeout 0 would mean none).
time_left() { echo $((budget - (SECONDS - start))); }
cap() {
  local left=$(($(time_left) - 2))
  [ "$left" -lt 1 ] && left=1
  echo $(("$1" < left ? "$1" : left))
}

# transport_env default|socket: the environment that keeps NCCL on its sockets, for socket.
transport_env() { [ "$1" = socket ] && echo "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; }

# kill_orphans PATTERN STEP: the processes of ours still there after STEP (pgrep -f PATTERN)
# listed in $out/orphans.txt and killed by pid; 1 when there were any.
kill_orphans() {
  local pids pid
  pids=$(pgrep -f "$1" || true)
  [ -z "$pids" ] && return 0
  echo "ORPHANS after $2: $(echo "$pids" | tr '\n' ' ')" | tee -a "$out/orphans.txt"
  for pid in $pids; do kill -9 "$pid" 2>/dev/null; done
  return 1
}

# part_build: builds ncclshim in $build, setting it up first when it is new; the log in
# $out/build.log, its tail printed on failure.
part_build() {
  if ! { { [ -f "$build/build.ninja" ] || meson setup "$build"; } &&
    ninja -C "$build"; } >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    return 1
  fi
}

# part_compile COMPILER ARGS...: a program compiled against $build (after part_build):
# COMPILER ARGS with its headers and its libncclshim.so (rpath set); COMPILER is cc or
# "$cuda/bin/nvcc". The output goes to $out/build.log, its tail printed on failure.
part_compile() {
  if ! "$@" -Iinclude "-L$build/src" -lncclshim -Xlinker -rpath -Xlinker "$PWD/$build/src" \
    >>"$out/build.log" 2>&1; then
    tail -30 "$out/build.log"
    return 1
  fi
}

# part_order_rows CSV HEADER KEEP CASE...: rewrite CSV as HEADER, then one row per CASE in
# that order (a case with no row becomes "CASE,FAIL: not run"), then the rows matching the
# regular expression KEEP (none when it is empty).
# hang_range LINE: the all-reduces the hang dump's stderr LINE names, "FIRST LAST": #F alone
# is "F F", "#F or one of the K after it" (one event covers them) is "F F+K"; "? ?" when none.
hang_range() {
  local first after
  first=$(sed -n 's/.*(hang: ncclAllReduce #\([0-9]*\).*/\1/p' <<<"$1" | head -1)
  after=$(sed -n 's/.*(hang: ncclAllReduce #[0-9]* or one of the \([0-9]*\) after it.*/\1/p' <<<"$1" |
    head -1)
  if [ -n "$first" ]; then echo "$first $((first + ${after:-0}))"; else echo "? ?"; fi
}

part_order_rows() {
  local csv=$1 header=$2 keep=$3 c line
  shift 3
  {
    echo "$header"
    for c in "$@"; do
      line=$(grep -m1 "^$c," "$csv")
      echo "${line:-$c,FAIL: not run,\"\"}"
    done
    [ -z "$keep" ] || grep -E "$keep" "$csv"
  } >"$csv.sorted"
  mv "$csv.sorted" "$csv"
}
