#!/usr/bin/env bash
# Communicator capabilities on the GPU host, in one command from the repository root (about 3 minutes):
#   bash tests/gpu/comm/commcaps.sh
# Builds (or reuses) build-gpu/, then on each NCCL (system 2.28.3, pip 2.28.9, and 2.29.7
# when NCCL_2297=/path/to/libnccl.so.2 is given):
#   1. the gpu suite's symmetric-window cases over NCCL's sockets (NCCL_P2P_DISABLE=1
#      NCCL_SHM_DISABLE=1; the symmetric all-reduce also over the default transports): ok, or
#      skipped with the reason where windows do not register (never FAIL);
#   2. commcaps_gpu has: every ncclshim_comm_has answer, the ncclCommQueryProperties facts
#      and a symmetric allocation, per rank, on both transports;
#   3. commcaps_gpu agree: nothing differing (the cost: first call, median of 20), rank 1 given
#      a fake net plugin of a refused ABI, NCCL_PROTO=Simple before and after its init;
#   4. the probe's plugin report with that fake plugin (--require plugins-compatible).
# Writes ${OUT:-/tmp/out}/commcaps/: summary.txt, caps.csv, agree.csv, cost.csv, a log per step.
# Each step has a hard timeout; BUDGET_S (220 s) skips what is left rather than overrun.
# NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" commcaps 220
summary=$out/summary.txt
: >"$summary"

say "commcaps.sh: $(date -u +%FT%TZ) on $(hostname)"
tool=$build/commcaps_gpu
part_build && part_compile cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Itests/gpu/comm \
  tests/gpu/comm/commcaps_gpu.c tests/gpu/comm/gpu_common.c -o "$tool" || exit 1
plugin=$PWD/$build/libnccl-net-commcaps-old.so
cc -shared -fPIC -fvisibility=hidden -DFAKE_PLUGIN_HARMLESS -DSYMBOL_A=ncclNetPlugin_v4 \
  tests/probe/fake_plugin.c -o "$plugin" >>"$out/build.log" 2>&1 || exit 1
echo "nccl,transport,rank,capability,answer,time,reason" >"$out/caps.csv"
echo "nccl,scenario,rank,status,ms,message" >"$out/agree.csv"
echo "nccl,what,value" >"$out/cost.csv"

for which in "${nccls[@]}"; do
  lib=$(nccl_lib "$which")
  [ -f "$lib" ] || { say "$which: no $lib: skipped"; continue; }
  export NCCLSHIM_NCCL_LIBRARY=$lib
  say "== $which: $lib"
  for tr in default socket; do
    if [ "$(time_left)" -lt 40 ]; then say "$which $tr: skipped (time budget)"; continue; fi
    log=$out/suite-$which-$tr.log
    # Sockets are where windows fail to register: all four window cases there; the symmetric
    # all-reduce alone over the default transports (the full suite is tests/gpu/run.sh's part suite).
    tests=(gpu-symmem-blocking)
    [ "$tr" = socket ] && tests+=(gpu-symmem-nonblocking gpu-fault-windows-blocking-fork-socket
                                 gpu-fault-windows-nonblocking-spawn-socket)
    # shellcheck disable=SC2046
    env $(transport_env "$tr") timeout 120 meson test -C "$build" --print-errorlogs \
      "${tests[@]}" >"$log" 2>&1
    say "$which $tr suite: $(grep -E '^(Ok|Fail|Skipped):' "$log" | tr -s ' ' | tr '\n' ' ')"
    grep -h "skip:" "$build/meson-logs/testlog.txt" | sort -u | head -3 | sed "s/^/  /" |
      tee -a "$summary" >/dev/null
    log=$out/has-$which-$tr.log
    # shellcheck disable=SC2046
    env $(transport_env "$tr") timeout 90 "$tool" has >"$log" 2>&1
    say "$which $tr has: exit $?"
    grep -E "^CAPS," "$log" | sed "s/^CAPS,/$which,$tr,/" >>"$out/caps.csv"
    grep -E "^(CAPS,0|FACTS,0|SYMMEM,0)" "$log" | sed "s/^/  /" | tee -a "$summary" >/dev/null
  done
  for scenario in none plugin proto-late proto; do
    if [ "$(time_left)" -lt 25 ]; then say "$which agree $scenario: skipped (time budget)"; continue; fi
    log=$out/agree-$which-$scenario.log
    FAKE_PLUGIN=$plugin timeout 60 "$tool" agree "$scenario" >"$log" 2>&1
    say "$which agree $scenario: exit $? $(grep -E '^AGREE,[^,]*,0,' "$log" | cut -d, -f4,5 | tr '\n' ' ')"
    grep -E "^AGREE," "$log" | sed "s/^AGREE,/$which,/" >>"$out/agree.csv"
    grep -E "^COST," "$log" | sed "s/^COST,/$which,/" | tee -a "$out/cost.csv" | sed "s/^/  /" |
      tee -a "$summary" >/dev/null
    grep -E "^AGREE,[^,]*,0,UNAVAILABLE" "$log" | cut -d, -f6- | cut -c1-400 | sed "s/^/  /" |
      tee -a "$summary" >/dev/null
  done
  log=$out/probe-$which.log
  NCCL_NET_PLUGIN=$plugin timeout 30 "$build/src/probe/ncclshim-probe" --no-devices \
    --require plugins-compatible >"$log" 2>&1
  say "$which probe --require plugins-compatible with the old-ABI plugin: exit $? (1 expected)"
  sed -n '/^NCCL plugins:/,/^CUDA driver/p' "$log" | head -6 | sed "s/^/  /" >>"$summary"
done
unset NCCLSHIM_NCCL_LIBRARY
say "done in $((SECONDS - start)) s"
