#!/usr/bin/env bash
# The plugin ABI table (include/ncclshim/nccl_plugins.h) against the GPU host's real NCCLs, in
# one command from the repository root (under 10 seconds, no build, no GPU work):
#   bash bench/gpu/plugin_abis.sh
# For each NCCL (system 2.28.3, pip 2.28.9, and 2.29.7 when NCCL_2297=/path/to/libnccl.so.2
# is given) it lists the plugin symbols the library's loaders look up (string literals in its
# .rodata): a release the table lists as checked must agree with it; for another release
# (2.28.3) the list printed is what the table needs to add it to NCCLSHIM_PLUGIN_CHECKED_RELEASES.
# Writes ${OUT:-/tmp/out}/plugin-abis/table.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/out}/plugin-abis
mkdir -p "$out"
libs=("${SYS_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}"
  "${PIP_NCCL:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}")
[ -n "${NCCL_2297:-}" ] && libs+=("$NCCL_2297")
timeout 60 python3 tests/probe/check_plugin_table.py include/ncclshim/nccl_plugins.h \
  "${libs[@]}" 2>&1 | tee "$out/table.txt"
echo "exit ${PIPESTATUS[0]}" | tee -a "$out/table.txt"
