#!/usr/bin/env bash
# The function list's first versions against what each real NCCL exports (the Gin
# outbox/inbox rows, exported by 2.29.7 before any Linux header declared them). A part of
# tests/gpu/run.sh (PARTS=exports), or alone after a build:
#   OUT=/tmp/out bash tests/gpu/nccl/exports.sh [BUILD]      (BUILD: default build-gpu)
# For each NCCL (SYS_NCCL, PIP_NCCL, NCCL_2297 when set), each row of the list
# (tests/abi/list_rows: NAME FIRST_VERSION POLICY) gets a verdict: a row first listed at or
# below the library's version must be exported by it (nm -D), a row listed above must not be
# (else its first version is too late). Writes $OUT/exports/exports.csv
# (case,verdict,nccl,version,function,first,exported) and summary.txt. No GPU work; seconds.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" exports
build=${1:-$build}
rows=$build/tests/abi/list_rows
[ -x "$rows" ] || { echo "exports: no $rows (build first)"; exit 1; }
csv=$out/exports.csv
echo "case,verdict,nccl,version,function,first,exported" >"$csv"
: >"$out/summary.txt"
for which in sys pip 2297; do
  lib=$(nccl_lib "$which")
  if [ -z "$lib" ] || [ ! -f "$lib" ]; then
    echo "$which: not here" | tee -a "$out/summary.txt"
    continue
  fi
  # The version the library says of itself, from its file name or banner, as the probe reads it.
  version=$(NCCLSHIM_NCCL_LIBRARY=$lib "$build/src/probe/ncclshim-probe" --json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["nccl"]["version_code"])' 2>/dev/null)
  [ -n "$version" ] || { echo "$which: the probe gave no version for $lib" | tee -a "$out/summary.txt"; continue; }
  nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$out/exports-$which.txt"
  bad=0 n=0
  while read -r name first _; do
    n=$((n + 1))
    exported=no
    grep -qx "$name" "$out/exports-$which.txt" && exported=yes
    verdict=ok
    if [ "$first" -le "$version" ] && [ "$exported" = no ]; then
      verdict="FAIL: listed from $first but $version does not export it"
    elif [ "$first" -gt "$version" ] && [ "$exported" = yes ]; then
      verdict="FAIL: $version exports it but the list says from $first"
    fi
    [ "$verdict" = ok ] || bad=$((bad + 1))
    echo "$which-$name,$verdict,$which,$version,$name,$first,$exported" >>"$csv"
  done < <("$rows")
  echo "$which ($version, $lib): $n rows, $bad wrong" | tee -a "$out/summary.txt"
done
grep -h ',FAIL' "$csv" | cut -d, -f2 | head -10
