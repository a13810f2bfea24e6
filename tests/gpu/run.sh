#!/usr/bin/env bash
# Every acceptance part on the GPU host, in one call from the repository root:
#   [PARTS="suite faults doctor"] bash tests/gpu/run.sh          (default: every part, in order)
#   bash tests/gpu/run.sh --list      (the parts and their scripts; exit 1 when a part has no
#                                      script or a script of tests/gpu/<area>/ is no part)
# A part is the meson suites (suite) or one script, tests/gpu/<area>/<part>.sh, whose verdicts
# are ok or FAIL; what only measures is bench/gpu/run.sh's. Per part: LIMIT_<part> seconds
# (PART_LIMIT_S, 300, by default); the suite runs on NCCLS (default "sys pip 2297"); doctor
# takes the wheel carried in build-wheel/.
# Unpacks a carried NCCL build (.carry/nccl2297.tar.xz: libnccl.so.2.29.7 and its include/,
# made by shared build.sh on that host, see bench/results/README.md), builds ncclshim once in
# build-gpu/ ($BUILD; reused while the machine stays warm), then runs each part under its own
# time limit. Each part leaves its files in $OUT/<part>/ (the part's own script) and the
# runner packs each part's folder as $OUT/<part>.tgz, so that a cut-short call still returns
# what was done. NVLink multicast stays off. A part's script starts by sourcing
# tests/gpu/part_common.sh: its folder under $OUT, these NCCLs, the build, a time budget.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

# Every part, the cheap and one-GPU ones first; the scripts' folders are their areas.
all_parts="suite probe exports plugin_abis truth doctor commsplit commcaps graphs hangdump
  tracker python faults devapi dropin recorder acceptance2"

# part_script PART: its script, tests/gpu/<area>/PART.sh (nothing for suite or an unknown one).
part_script() {
  local found=(tests/gpu/*/"$1".sh)
  [ -f "${found[0]}" ] && echo "${found[0]}"
}

# The scripts of tests/gpu/<area>/ that are no part: what the parts or the gpu suite run.
helpers="launchers.sh"

if [ "${1:-}" = --list ]; then
  status=0
  for part in $all_parts; do
    script=$(part_script "$part")
    [ "$part" = suite ] && script="meson test --suite gpu (each NCCL), abi, real, probe"
    printf '%-12s %s\n' "$part" "${script:-MISSING}"
    [ -n "$script" ] || status=1
  done
  for script in tests/gpu/*/*.sh; do
    name=$(basename "$script")
    # shellcheck disable=SC2086 # the lists split into words
    printf '%s\n' $all_parts $helpers | grep -qx "${name%.sh}\|$name" && continue
    echo "$script: not a part of tests/gpu/run.sh (add it to all_parts or helpers)"
    status=1
  done
  exit "$status"
fi

export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/ncclshim-gpu}
mkdir -p "$out"
export BUILD=${BUILD:-build-gpu}
build=$BUILD
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

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
ninja -C "$build" >>"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: ok ($(date -u +%T))"

# The gpu suite (and the suites that need no cmocka) on each NCCL.
suite() {
  local d=$out/suite which lib
  mkdir -p "$d"
  for which in ${NCCLS:-sys pip 2297}; do
    case $which in sys) lib=$SYS_NCCL ;; pip) lib=$PIP_NCCL ;; 2297) lib=${NCCL_2297:-} ;; esac
    [ -n "$lib" ] || continue
    NCCLSHIM_NCCL_LIBRARY=$lib meson test -C "$build" --suite gpu --print-errorlogs \
      --timeout-multiplier 2 >"$d/gpu-$which.log" 2>&1
    cp "$build/meson-logs/testlog.txt" "$d/testlog-gpu-$which.txt"
    echo "gpu suite on $which: $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$d/gpu-$which.log" | tr -s ' ' | tr '\n' ' ')"
  done
  meson test -C "$build" --suite abi --suite real --suite probe --print-errorlogs \
    >"$d/other-suites.log" 2>&1
  echo "abi/real/probe: $(grep -E '^(Ok|Fail|Skipped):' "$d/other-suites.log" | tr -s ' ' | tr '\n' ' ')"
}

for part in ${PARTS:-$all_parts}; do
  start=$SECONDS
  echo "=== $part ($(date -u +%T))"
  script=$(part_script "$part")
  if [ "$part" = suite ]; then
    suite
  elif [ -n "$script" ]; then
    limit=LIMIT_$part args=()
    [ "$part" = doctor ] && args=(build-wheel/*.whl)
    OUT=$out timeout "${!limit:-${PART_LIMIT_S:-300}}" bash "$script" "${args[@]}" 2>&1 | tail -25
  elif [ -f "bench/gpu/$part.sh" ]; then
    echo "$part measures: STAGES=$part bash bench/gpu/run.sh"
  else
    echo "no part $part"
  fi
  echo "=== $part: $((SECONDS - start)) s"
  [ -d "$out/$part" ] && tar -C "$out" -czf "$out/$part.tgz" "$part" && rm -rf "${out:?}/$part"
done
