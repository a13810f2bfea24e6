#!/usr/bin/env bash
# The plugin ABI table (include/ncclshim/nccl_plugins.h) against the GPU host's real NCCLs, in
# one command from the repository root (under 10 seconds, no build, no GPU work):
#   bash tests/gpu/nccl/plugin_abis.sh
# For each NCCL (system 2.28.3, pip 2.28.9, and 2.29.7 when NCCL_2297=/path/to/libnccl.so.2
# is given) it lists the plugin symbols the library's loaders look up (string literals in its
# .rodata): a release the table lists as checked must agree with it; for another release
# (2.28.3) the list printed is what the table needs to add it to NCCLSHIM_PLUGIN_CHECKED_RELEASES.
# Writes ${OUT:-/tmp/out}/plugin_abis/table.txt.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" plugin_abis
libs=()
for which in "${nccls[@]}"; do libs+=("$(nccl_lib "$which")"); done
timeout 60 python3 tests/probe/check_plugin_table.py include/ncclshim/nccl_plugins.h \
  "${libs[@]}" 2>&1 | tee "$out/table.txt"
echo "exit ${PIPESTATUS[0]}" | tee -a "$out/table.txt"
