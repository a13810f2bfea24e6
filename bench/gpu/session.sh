#!/usr/bin/env bash
# One call on the GPU host, from the repository root:
#   PARTS="suite percall faults recorder commcaps doctor" bash bench/gpu/session.sh
# Per part: LIMIT_<part> seconds (PART_LIMIT_S, 300, by default); the suite runs on NCCLS
# (default "sys pip 2297"); doctor takes the wheel carried in build-wheel/.
# Unpacks a carried NCCL build (.carry/nccl2297.tar.xz: libnccl.so.2.29.7 and its include/,
# made by shared build.sh on that host, see bench/results/README.md), builds ncclshim once in
# build-gpu/ (reused while the machine stays warm), then runs each part under its own time
# limit. Each part leaves its files in $OUT/<part>/ (the part's own script) and the session
# packs each part's folder as $OUT/<part>.tgz, so that a cut-short call still returns what
# was done. NVLink multicast stays off. A part's script starts by sourcing
# bench/gpu/part_common.sh: its folder under $OUT, these NCCLs, build-gpu/, a time budget.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/ncclshim-gpu}
mkdir -p "$out"
export SYS_NCCL=${SYS_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
export PIP_NCCL=${PIP_NCCL:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}

# NCCL 2.29.7, built from NVIDIA's source for sm_90 and carried in compressed.
if [ -z "${NCCL_2297:-}" ] && [ -f .carry/nccl2297.tar.xz ]; then
  mkdir -p /tmp/nccl-2.29.7
  [ -f /tmp/nccl-2.29.7/lib/libnccl.so.2 ] || {
    tar -C /tmp/nccl-2.29.7 -xJf .carry/nccl2297.tar.xz &&
      ln -sf libnccl.so.2.29.7 /tmp/nccl-2.29.7/lib/libnccl.so.2
  }
fi
[ -f /tmp/nccl-2.29.7/lib/libnccl.so.2 ] && export NCCL_2297=${NCCL_2297:-/tmp/nccl-2.29.7/lib/libnccl.so.2}
echo "NCCLs: sys=$SYS_NCCL pip=$PIP_NCCL 2.29.7=${NCCL_2297:-none}"

if [ ! -f build-gpu/build.ninja ]; then
  meson setup build-gpu >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
ninja -C build-gpu >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: ok ($(date -u +%T))"

# The gpu suite (and the suites that need no cmocka) on each NCCL.
suite() {
  local d=$out/suite which lib
  mkdir -p "$d"
  for which in ${NCCLS:-sys pip 2297}; do
    case $which in sys) lib=$SYS_NCCL ;; pip) lib=$PIP_NCCL ;; 2297) lib=${NCCL_2297:-} ;; esac
    [ -n "$lib" ] || continue
    NCCLSHIM_NCCL_LIBRARY=$lib meson test -C build-gpu --suite gpu --print-errorlogs \
      --timeout-multiplier 2 >"$d/gpu-$which.log" 2>&1
    cp build-gpu/meson-logs/testlog.txt "$d/testlog-gpu-$which.txt"
    echo "gpu suite on $which: $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$d/gpu-$which.log" | tr -s ' ' | tr '\n' ' ')"
  done
  meson test -C build-gpu --suite abi --suite real --suite probe --print-errorlogs \
    >"$d/other-suites.log" 2>&1
  echo "abi/real/probe: $(grep -E '^(Ok|Fail|Skipped):' "$d/other-suites.log" | tr -s ' ' | tr '\n' ' ')"
}

for part in ${PARTS:-suite}; do
  start=$SECONDS
  echo "=== $part ($(date -u +%T))"
  if [ "$part" = suite ]; then
    suite
  elif [ -f "bench/gpu/$part.sh" ]; then
    limit=LIMIT_$part args=()
    [ "$part" = doctor ] && args=(build-wheel/*.whl)
    OUT=$out timeout "${!limit:-${PART_LIMIT_S:-300}}" bash "bench/gpu/$part.sh" "${args[@]}" 2>&1 | tail -25
  else
    echo "no part $part"
  fi
  echo "=== $part: $((SECONDS - start)) s"
  [ -d "$out/$part" ] && tar -C "$out" -czf "$out/$part.tgz" "$part" && rm -rf "${out:?}/$part"
done
