#!/usr/bin/env bash
# Faults between processes on the GPU host, in one command from the repository root:
#   bash tests/gpu/comm/faults.sh
# Builds (or reuses) build-gpu/, then runs tests/gpu/comm/gpu_faults' killed-rank cases on
# both NCCLs (system, pip wheel) over the default transports and over NCCL's sockets on
# loopback, the example over sockets, and the example under torchrun and mpirun. Each step
# has its own hard timeout and runs whatever the others did; a time budget (BUDGET_S, 330 s)
# skips what is left rather than overrun. Writes ${OUT:-/tmp/out}/faults/: faults.csv (one
# line per case), faults.md (the table), launchers.csv, messages.txt, a log per step.
# Selection: NCCLS="sys pip" (or 2297: NCCL_2297), TRANSPORTS="default socket",
# KINDS="blocking nonblocking watchdog" (watchdog: a NCCLSHIM_COMM_SPLIT_BLOCKING
# communicator watched by the watchdog), LAUNCHERS=0 skips the example and launcher steps;
# SYS_NCCL, PIP_NCCL: other paths. The watchdog cases alone, on the system NCCL and 2.29.7:
#   KINDS=watchdog LAUNCHERS=0 NCCLS="sys 2297" NCCL_2297=/path/libnccl.so.2 bash tests/gpu/comm/faults.sh
# NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" faults 330
faults=$build/tests/gpu/comm/gpu_faults
example=$build/examples/ncclshim-allreduce
cases=(
  "blocking collective fork" "blocking collective spawn"
  "nonblocking collective fork" "nonblocking collective spawn"
  "nonblocking init fork" "nonblocking init spawn"
  "blocking windows fork" "nonblocking windows spawn"
  "watchdog collective fork" "watchdog collective spawn"
  "watchdog init fork" "watchdog windows fork"
)
header=case,comm,launch,transport,nccl,kill_point,phase,status,wait_ms,deadline_ms
header+=,detected_after_kill_ms,abort_status,abort_ms,abort_deadline_ms,stream_after_abort
header+=,drain_ms,allreduces,rank0_exit,rank1,orphans,result
echo "$header" >"$out/faults.csv"
echo "step,nccl,transport,exit,seconds,result" >"$out/launchers.csv"
: >"$out/messages.txt"
: >"$out/skipped.txt"
: >"$out/orphans.txt"

# Processes of ours, which kill_orphans lists and kills after each step.
ours="$PWD/$build/(tests/gpu/comm/gpu_faults|examples/ncclshim-allreduce)|/proc/self/exe --worker"

fault_case() { # NCCL TRANSPORT COMM POINT LAUNCH
  local which=$1 tr=$2 name="$4-$3-$5"
  local log="$out/case-$which-$tr-$name.log" t=$SECONDS
  if [ "$(time_left)" -lt 45 ]; then
    echo "$which $tr $name: skipped (time budget)" | tee -a "$out/skipped.txt"
    return
  fi
  # shellcheck disable=SC2046
  env $(transport_env "$tr") NCCLSHIM_NCCL_LIBRARY="$(nccl_lib "$which")" \
    timeout -k 5 75 "$PWD/$faults" "$3" "$4" "$5" >"$log" 2>&1
  local rc=$?
  if grep -q '^FAULTS-CSV,' "$log"; then
    grep '^FAULTS-CSV,' "$log" | sed 's/^FAULTS-CSV,//' >>"$out/faults.csv"
  else
    # Exit 77: the case cannot run here (windows that do not register), with its reason.
    local verdict=FAIL
    [ "$rc" -eq 77 ] && verdict=SKIP
    echo "$name,$3,$5,$tr,$which,$4,-,-,,,,,,,,,,,,,$verdict (exit $rc: $(grep -m1 -E 'FAIL|skip' "$log" | tr ',' ' '))" >>"$out/faults.csv"
  fi
  grep '^FAULTS-MSG,' "$log" >>"$out/messages.txt"
  kill_orphans "$ours" "$which $tr $name" || echo "$name,$3,$5,$tr,$which,$4,-,-,,,,,,,,,,,,,FAIL (orphans)" >>"$out/faults.csv"
  printf '%-4s %-8s %-32s exit %3d  %3ds  %s\n' "$which" "$tr" "$name" "$rc" $((SECONDS - t)) \
    "$(grep -m1 -oE 'FAIL: .*|skip: .*' "$log" || echo PASS)"
}

launcher_step() { # NAME NCCL TRANSPORT COMMAND...
  local name=$1 which=$2 tr=$3 t=$SECONDS
  shift 3
  if [ "$(time_left)" -lt 60 ]; then
    echo "$name $which $tr: skipped (time budget)" | tee -a "$out/skipped.txt"
    return
  fi
  # shellcheck disable=SC2046
  env $(transport_env "$tr") NCCLSHIM_NCCL_LIBRARY="$(nccl_lib "$which")" \
    timeout -k 5 170 "$@" >"$out/$name-$which-$tr.log" 2>&1
  local rc=$? result=PASS
  [ $rc -eq 77 ] && result=SKIP
  [ $rc -ne 0 ] && [ $rc -ne 77 ] && result=FAIL
  kill_orphans "$ours" "$name" || result="FAIL (orphans)"
  echo "$name,$which,$tr,$rc,$((SECONDS - t)),$result" >>"$out/launchers.csv"
  printf '%-4s %-8s %-32s exit %3d  %3ds  %s\n' "$which" "$tr" "$name" "$rc" $((SECONDS - t)) "$result"
}

echo "=== build ($(date -u +%T))"
part_build || exit 1
kill_orphans "$ours" "the start" || true

chosen=${NCCLS:-sys pip}
for which in $chosen; do
  for tr in ${TRANSPORTS:-default socket}; do
    echo "=== killed ranks: $which NCCL, $tr transport ($(date -u +%T), $(time_left) s left)"
    for c in "${cases[@]}"; do
      [[ " ${KINDS:-blocking nonblocking watchdog} " == *" ${c%% *} "* ]] || continue
      # shellcheck disable=SC2086
      fault_case "$which" "$tr" $c
    done
  done
  if [ "$which" = "${chosen%% *}" ] && [ "${LAUNCHERS:-1}" != 0 ]; then
    echo "=== the example over sockets and under launchers ($(date -u +%T), $(time_left) s left)"
    launcher_step example-fork "$which" socket "$build/tests/gpu/comm/gpu_example" "$PWD/$example" \
      fork --count 262144 --iters 5 --timeout-ms 30000
    launcher_step example-launcher "$which" socket "$build/tests/gpu/comm/gpu_example" \
      "$PWD/$example" launcher
    launcher_step example-torchrun "$which" default bash tests/gpu/comm/launchers.sh \
      "$PWD/$example" torchrun
    launcher_step example-torchrun "$which" socket bash tests/gpu/comm/launchers.sh \
      "$PWD/$example" torchrun
    launcher_step example-mpirun "$which" default bash tests/gpu/comm/launchers.sh \
      "$PWD/$example" mpirun
  fi
done

echo "=== table ($(date -u +%T))"
{
  echo "| case | transport | NCCL | failure seen in | status | wait (ms) | detected after kill (ms, deadline $(sed -n 2p "$out/faults.csv" | cut -d, -f10)) | abort | abort (ms) | stream after abort | rank 0 exit | orphans | result |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  tail -n +2 "$out/faults.csv" | awk -F, '{printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $4, $5, $7, $8, $9, $11, $12, $13, $15, $18, $20, $21}'
  echo
  echo "| step | NCCL | transport | exit | seconds | result |"
  echo "|---|---|---|---|---|---|"
  tail -n +2 "$out/launchers.csv" | awk -F, '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}'
} >"$out/faults.md"
cat "$out/faults.md"
pass=$(tail -n +2 "$out/faults.csv" | grep -c ',PASS$')
total=$(tail -n +2 "$out/faults.csv" | wc -l)
skip=$(tail -n +2 "$out/faults.csv" | grep -c ',SKIP (')
echo "=== summary: $pass of $total killed-rank cases passed, $skip skipped with their reason; launchers: $(tail -n +2 "$out/launchers.csv" | cut -d, -f6 | sort | uniq -c | tr '\n' ' ')"
echo "skipped for time: $(wc -l <"$out/skipped.txt"); orphans: $(wc -l <"$out/orphans.txt")"
kill_orphans "$ours" "the end" && echo "no process of ours left"
echo "total $((SECONDS - start)) s; files in $out"
