#!/usr/bin/env bash
# The x86-64 release archive on the GPU host (glibc forward compatibility, docs/release.md):
#
#   bash cross/release-gpu.sh ncclshim-<version>-linux-x86_64.tar.gz
#
# From the repository root on the GPU host (2 GPUs, system NCCL and the pip wheel's NCCL).
# Unpacks the archive in /tmp; runs the unpacked probe (text and JSON) on its own search and
# on each NCCL; builds the gpu suite's programs (tests/gpu/comm) through pkg-config ncclshim
# and the plain NCCL program bench/gpu/collectives.c through pkg-config ncclshim-nccl (the
# drop-in), all against the unpacked tree, and runs them on each NCCL. Each step is
# independent and time-limited; logs in ${OUT:-/tmp/out}/release/, one line per step here.
# NVLink multicast stays off.
set -uo pipefail
archive=$(realpath "${1:?usage: bash cross/release-gpu.sh ARCHIVE}")
cd "$(dirname "$0")/.." || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
logs=${OUT:-/tmp/out}/release
mkdir -p "$logs"
sys_nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2
pip_root=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
declare -A nccl=([sys]=$sys_nccl [pip]=$pip_root/lib/libnccl.so.2)
declare -A nccl_inc=([sys]=/usr/include [pip]=$pip_root/include)
cuda=/usr/local/cuda
failed=0

# step NAME SECONDS COMMAND...: output in $logs/NAME.log; one line here. Programs run under
# timeout; this script's own functions (builds and listings, no GPU work) run as they are.
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  if declare -F "$1" >/dev/null; then "$@"; else timeout -k 5 "$limit" "$@"; fi \
    >"$logs/$name.log" 2>&1
  rc=$?
  printf '%-4s %-34s exit %3d  %3ds  %s\n' "$([ $rc -eq 0 ] && echo ok || echo FAIL)" "$name" \
    "$rc" $((SECONDS - start)) "$(tail -1 "$logs/$name.log" | cut -c1-90)"
  [ $rc -eq 0 ] || failed=1
}

unpack=/tmp/ncclshim-release-gpu
rm -rf "$unpack" && mkdir -p "$unpack" && tar -C "$unpack" -xzf "$archive" || exit 1
tree=$(echo "$unpack"/ncclshim-*)
export PKG_CONFIG_LIBDIR=$tree/lib/pkgconfig PKG_CONFIG_PATH=""

machine() {
  date -u
  uname -a
  ldd --version | head -1
  nvidia-smi --query-gpu=index,name,driver_version --format=csv
  ls -l "${nccl[@]}"
  basename "$archive"
  (cd "$tree" && sha256sum --check SHA256SUMS)
  objdump -T "$tree"/lib/libncclshim.so.0 "$tree"/lib/libncclshim-nccl.so.0 \
    "$tree"/bin/ncclshim-probe | grep -o 'GLIBC_[0-9.]*' | sort -uV | tr '\n' ' '
  echo
}
step machine 60 machine

step probe-default 60 "$tree/bin/ncclshim-probe" -v
step probe-default-json 60 "$tree/bin/ncclshim-probe" --json
for which in sys pip; do
  step "probe-$which" 60 "$tree/bin/ncclshim-probe" -v --library "${nccl[$which]}" --require 2.28
  step "probe-$which-json" 60 "$tree/bin/ncclshim-probe" --json --library "${nccl[$which]}"
done

# The gpu suite's programs, built against the unpacked tree (its RUNPATH for the library).
gpu_build() {
  mkdir -p "$unpack/bin" &&
    for prog in gpu_collectives gpu_symmem; do
      # shellcheck disable=SC2046 # pkg-config's flags are words
      gcc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$unpack/bin/$prog" \
        "tests/gpu/comm/$prog.c" tests/gpu/comm/gpu_common.c \
        $(pkg-config --cflags --libs ncclshim) -Wl,-rpath,"$tree/lib" || return 1
    done
  ldd "$unpack/bin/gpu_collectives" | grep ncclshim
}
step gpu-build 120 gpu_build
for which in sys pip; do
  for run in "gpu_collectives blocking" "gpu_collectives nonblocking" "gpu_symmem blocking"; do
    step "$which-${run// /-}" 120 env NCCLSHIM_NCCL_LIBRARY="${nccl[$which]}" \
      "$unpack/bin/${run%% *}" "${run#* }"
  done
done

# A plain NCCL program (its own nccl.h and cudart) linked with the unpacked drop-in.
dropin_build() {
  local which=$1
  # shellcheck disable=SC2046 # pkg-config's flags are words
  gcc -std=c11 -O2 -Wall -Wextra -Werror -I"${nccl_inc[$which]}" -I"$cuda/include" \
    bench/gpu/collectives.c -o "$unpack/bin/collectives-dropin-$which" \
    $(pkg-config --libs ncclshim-nccl) -Wl,-rpath,"$tree/lib" \
    -L"$cuda/lib64" -lcudart -Wl,-rpath,"$cuda/lib64" &&
    ldd "$unpack/bin/collectives-dropin-$which" | grep -E 'ncclshim|nccl'
}
for which in sys pip; do
  step "dropin-build-$which" 120 dropin_build "$which"
  step "dropin-collectives-$which" 180 env NCCLSHIM_NCCL_LIBRARY="${nccl[$which]}" \
    "$unpack/bin/collectives-dropin-$which" "dropin-$which" 67108864
done

echo "logs in $logs; $([ $failed -eq 0 ] && echo 'every step passed' || echo 'some steps FAILED')"
exit $failed
