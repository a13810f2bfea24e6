#!/usr/bin/env bash
# The GPU-progress tracker's acceptance on one GPU, a part of tests/gpu/run.sh:
#   PARTS=tracker bash tests/gpu/run.sh
# or alone from the repository root (it builds build-gpu/ when tests/gpu/run.sh has not):
#   bash tests/gpu/track/tracker.sh
# Builds tests/gpu/track/tracker_comm.cu (against libncclshim) and tracker_nccl.cu (a plain NCCL
# program, linked to the system NCCL, 2.28.3 on the GPU host) with nvcc, then runs, each step
# under its own timeout, none past BUDGET_S (270) from the start:
#   churn-watchdog              tracker_comm churn 200: a watched communicator, per round a new
#                               stream (cudaStreamCreate / cuStreamCreate), 8 recorded
#                               all-reduces, synchronise, destroy: no crash, every record OK,
#                               no failure reported, nothing left outstanding
#   churn-preload, churn-audit  tracker_nccl churn 200 under the drop-in (LD_PRELOAD, LD_AUDIT)
#                               with NCCLSHIM_RECORD=1000 NCCLSHIM_RECORD_HANG_MS=200: exit 0, no
#                               dump while nothing is hung; then a SIGUSR2 dump
#                               (NCCLSHIM_RECORD_SIGNAL=USR2) that must list the all-reduces,
#                               which shows the calls went through the drop-in
#   hold-watchdog-KIND          tracker_comm hold, KIND created, legacy, per-thread: 4 recorded
#                               all-reduces, a kernel spinning on a host-mapped flag (limit
#                               3 s), 4 more behind it: the failure within deadline 300 ms ..
#                               (300 + interval 10) * 1.1, naming all-reduce #5; released,
#                               aborted, exit 0
#   hold-dump-HOW-KIND          tracker_nccl hold KIND under the drop-in (HOW preload, audit),
#                               NCCLSHIM_RECORD_HANG_MS=200: one hang dump within 200 .. (200 +
#                               its pass interval, 200/20 ms) * 1.1 of the first held call, one
#                               stderr line naming ncclAllReduce #5, the kernel released, exit 0
#   cupy-preload, cupy-audit    tracker_cupy.py in the torch venv (CuPy, cupy.cuda.nccl on the
#                               NCCL CuPy loads): 100 rounds of a new cupy.cuda.Stream, 8
#                               allReduce, synchronize, del, under the drop-in with the hang dump
#                               on: as churn-preload, and the sums right
#   graphs-CASE-NCCL            tests/gpu/comm/graphs.sh (the watchdog with CUDA graphs), each of its
#                               rows copied; a row of bench/results/h200/watchdog/graphs.csv it
#                               did not produce is a FAIL (its 2.29.7 rows only with NCCL_2297)
# and the cost, in one process each, call by call: tracker_comm cost (cuEventRecord alone and
# ncclshim_comm_record, each right after an all-reduce on the same stream, in turns), and
# tracker_nccl cost under LD_PRELOAD, 3 processes with NCCLSHIM_RECORD_HANG_MS=60000 and 3
# without, alternating (NCCLSHIM_RECORD=1000 in both): hang_call is what the hang dump adds
# (tests/gpu/track/tracker_cost.py says how). Writes ${OUT:-/tmp/out}/tracker/:
#   cases.csv     case,verdict,detail (verdict ok or FAIL: why), the cases above in order
#   cost.csv      stream,what,ns: per stream kind event_record, record, hang_call (medians),
#                 then the figures they come from
#   summary.txt   progress, the cost verdicts (record and hang_call <= event_record + 50 ns per
#                 stream, PASS/FAIL) and the count of ok cases
#   CASE/run.log and dumps, cost-*.csv, graphs/ (graphs.sh's own files), build.log
# Exit 0 when every case is ok and the cost passes. About 150 s. NVLink multicast stays off.
# shellcheck source=tests/gpu/part_common.sh
source "$(dirname "$0")/../part_common.sh" tracker 270
bin=$out/bin
mkdir -p "$bin"
dropin=$PWD/$build/src/dropin/libncclshim-nccl.so.0
csv=$out/cases.csv
hang_ms=${TRACKER_HANG_MS:-200}
pass_ms=$((hang_ms / 20 < 100 ? hang_ms / 20 : 100))
pass_ms=${TRACKER_HANG_PASS_MS:-$pass_ms}
kinds=(created legacy per-thread)
cases=(churn-watchdog churn-preload churn-audit)
for k in "${kinds[@]}"; do cases+=("hold-watchdog-$k"); done
for how in preload audit; do for k in "${kinds[@]}"; do cases+=("hold-dump-$how-$k"); done; done
cases+=(cupy-preload cupy-audit)
: >"$out/summary.txt"
echo "case,verdict,detail" >"$csv"

row() { # CASE VERDICT DETAIL
  echo "$1,${2//,/;},\"${3//\"/\'}\"" >>"$csv"
  printf '%-30s %-50s %s\n' "$1" "${2:0:50}" "${3:0:90}"
}

# ok, or FAIL: and the reasons gathered ("a; b; ").
verdict() { if [ -z "$1" ]; then echo ok; else echo "FAIL: ${1%; }"; fi; }

step() { say "=== $1 ($(date -u +%T), $((SECONDS - start)) s)"; }

# How a program ended, from its exit status under timeout.
ended() {
  case $1 in
  0 | 1) echo "exit $1" ;;
  77) echo "skipped (no GPU)" ;;
  124 | 137) echo "timed out" ;;
  *)
    if [ "$1" -gt 128 ]; then echo "died of SIG$(kill -l $(($1 - 128)) 2>/dev/null)"; else
      echo "exit $1"
    fi
    ;;
  esac
}

# exit_why RC LOG: "" for exit 0, else how the program ended and its first failure line, "; ".
exit_why() {
  [ "$1" = 0 ] && return
  local failed
  failed=$(grep -m1 -E '^failed=|rror' "$2" | cut -c1-200)
  echo "$(ended "$1")${failed:+: $failed}; "
}

# The fixed cases in order, a FAIL for each that has no row, then the graphs rows; the
# summary's count. Exit 0 when every row is ok and the cost passed.
finish() {
  part_order_rows "$csv" "case,verdict,detail" '^graphs-' "${cases[@]}"
  local all ok
  all=$(($(wc -l <"$csv") - 1))
  ok=$(tail -n +2 "$csv" | cut -d, -f2 | grep -c '^ok$')
  # tests/gpu/run.sh shows a part's last 25 lines: the cases not ok and the cost verdicts last.
  tail -n +2 "$csv" | awk -F, '$2 != "ok" {print "not ok: " $1 ": " substr($2, 1, 100)}' | head -12
  grep -E '^(created|legacy|per-thread): ' "$out/summary.txt" | cut -c1-160
  say "tracker: $ok ok of $all cases; cost ${cost_verdict:-not run}; in $((SECONDS - start)) s"
  [ "$ok" = "$all" ] && [ "${cost_verdict:-}" = PASS ]
  exit $?
}

fail_all() {
  local c
  for c in "${cases[@]}"; do row "$c" "FAIL: $1" ""; done
  finish
}

# program_rows RC OUT CASE...: the rows a program printed in OUT for CASE..., each a FAIL when
# it ended badly (a signal, a timeout), and a FAIL for each case it printed no row for.
program_rows() {
  local rc=$1 file=$2 c line how verdict detail
  shift 2
  how=$(ended "$rc")
  for c in "$@"; do
    line=$(grep -m1 "^$c," "$file")
    if [ -z "$line" ]; then
      row "$c" "FAIL: $how without a verdict" "$(tail -n 3 "${file%.out}.log" | tr '\n' ' ')"
      continue
    fi
    IFS=, read -r _ verdict detail <<<"$line"
    detail=${detail#\"}
    detail=${detail%\"}
    [ "$rc" -gt 1 ] && verdict="FAIL: $how after its checks ($verdict)"
    row "$c" "$verdict" "$detail"
  done
}

# ---- build ------------------------------------------------------------------------------
step build
if ! nvidia-smi -L >/dev/null 2>&1; then
  fail_all "no GPU (nvidia-smi -L)"
fi
nccl_dir=$(dirname "$sys_nccl")
nccl_inc=()
[ "$sys_include" != /usr/include ] && nccl_inc=("-I$sys_include")
if ! part_build || [ ! -f "$dropin" ] ||
  ! part_compile "$cuda/bin/nvcc" -arch=sm_90 -O2 -Itests/gpu/dropin tests/gpu/track/tracker_comm.cu \
    -o "$bin/tracker_comm" ||
  ! "$cuda/bin/nvcc" -arch=sm_90 -O2 "${nccl_inc[@]}" -Itests/dropin -Itests/gpu/dropin \
    tests/gpu/track/tracker_nccl.cu \
    -o "$bin/tracker_nccl" "-L$nccl_dir" -l:libnccl.so.2 -Xlinker -rpath -Xlinker "$nccl_dir" \
    >>"$out/build.log" 2>&1; then
  tail -20 "$out/build.log"
  fail_all "build (see build.log)"
fi
say "NCCLs: system $sys_nccl, pip $pip_nccl${NCCL_2297:+, 2.29.7 $NCCL_2297}"
say "hang dump $hang_ms ms, its pass $pass_ms ms; driver $(nvidia-smi \
  --query-gpu=driver_version --format=csv,noheader | head -1); tree $(git rev-parse --short HEAD \
  2>/dev/null || echo unknown)"

# ---- the watchdog: churn and holds --------------------------------------------------------
step "churn-watchdog, hold-watchdog"
NCCLSHIM_NCCL_LIBRARY=$sys_nccl timeout -k 5 "$(cap 60)" "$bin/tracker_comm" churn 200 \
  >"$out/churn-watchdog.out" 2>"$out/churn-watchdog.log"
program_rows $? "$out/churn-watchdog.out" churn-watchdog
NCCLSHIM_NCCL_LIBRARY=$sys_nccl timeout -k 5 "$(cap 40)" "$bin/tracker_comm" hold \
  >"$out/hold-watchdog.out" 2>"$out/hold-watchdog.log"
program_rows $? "$out/hold-watchdog.out" "${kinds[@]/#/hold-watchdog-}"

# ---- the drop-in's hang dump: churn, CuPy, holds -------------------------------------------
# dump_env HOW: the drop-in's variables for HOW (preload, audit).
dump_env() {
  if [ "$1" = preload ]; then echo "LD_PRELOAD=$dropin"; else echo "LD_AUDIT=$dropin"; fi
}

# no_false_dump CASE HOW MIN_CALLS COMMAND...: run with the hang dump on and nothing hung:
# exit 0, no dump until the program's SIGUSR2, then that one dump, listing at least MIN_CALLS
# all-reduces. The command's last argument is added: the wait before the signal.
no_false_dump() {
  local name=$1 how=$2 min=$3 dir=$out/$1 why rc dumps calls signal_ms
  shift 3
  rm -rf "$dir" && mkdir -p "$dir"
  env "$(dump_env "$how")" NCCLSHIM_DEBUG=1 NCCLSHIM_RECORD=1000 \
    NCCLSHIM_RECORD_HANG_MS="$hang_ms" \
    NCCLSHIM_RECORD_DIR="$dir" NCCLSHIM_RECORD_SIGNAL=USR2 timeout -k 5 "$(cap 60)" \
    "$@" $((hang_ms + pass_ms + 200)) >"$dir/run.log" 2>&1
  rc=$?
  dumps=$(find "$dir" -maxdepth 1 -name 'ncclshim-record-*.jsonl' | wc -l)
  signal_ms=$(sed -n 's/^signal_dump_ms=//p' "$dir/run.log")
  calls=$(cat "$dir"/ncclshim-record-*.jsonl 2>/dev/null | grep -v '"kind":"header"' |
    grep -c '"function":"ncclAllReduce"')
  why=$(exit_why "$rc" "$dir/run.log")
  grep -q 'ncclshim recorder: wrote .*(hang' "$dir/run.log" && why+="a hang dump line on stderr; "
  grep -q '"reason":"hang"' "$dir"/ncclshim-record-*.jsonl 2>/dev/null && why+="a hang dump; "
  grep -q 'two NCCLs' "$dir/run.log" && why+="two NCCLs in the process; "
  grep -q '^wrong_sums=[1-9]' "$dir/run.log" && why+="wrong sums; "
  grep -q '^false_dump=1$' "$dir/run.log" && why+="a dump with nothing hung; "
  if [ -z "$signal_ms" ]; then
    [ "$rc" = 0 ] && why+="no signal_dump_ms line; "
  elif [ "$signal_ms" = none ]; then
    why+="SIGUSR2 had no handler: the recorder is off; "
  elif [ "$dumps" != 1 ] || ! grep -q '"reason":"signal"' "$dir"/ncclshim-record-*.jsonl ||
    [ "$calls" -lt "$min" ]; then
    why+="$dumps dumps, $calls all-reduces in the signal's dump ($min wanted:"
    why+=" calls not seen by the drop-in?); "
  fi
  [ -n "$why" ] && tail -n 5 "$dir/run.log"
  local rounds reused version
  rounds=$(sed -n 's/^rounds=//p' "$dir/run.log")
  reused=$(sed -n 's/^reused=//p' "$dir/run.log")
  version=$(sed -n 's/^nccl_version=//p' "$dir/run.log")
  local detail="${rounds:-?} rounds, the destroyed stream's handle again in ${reused:-?}"
  detail+="${version:+, NCCL $version}; signal dump after ${signal_ms:-?} ms with $calls"
  detail+=" all-reduces; $(grep -m1 -o 'interposing: NCCL [^ ]* from [^ ]*\|audit mode: NCCL mapped: [^ ;]*' \
    "$dir/run.log")"
  row "$name" "$(verdict "$why")" "$detail"
}

# hold_dump HOW KIND: one hang dump, in time, naming the first held all-reduce (#5).
hold_dump() {
  local how=$1 kind=$2 name=hold-dump-$1-$2 dir=$out/hold-dump-$1-$2 why rc detected line
  local first last dumps limit
  rm -rf "$dir" && mkdir -p "$dir"
  env "$(dump_env "$how")" NCCLSHIM_RECORD=1000 NCCLSHIM_RECORD_HANG_MS="$hang_ms" \
    NCCLSHIM_RECORD_DIR="$dir" timeout -k 5 "$(cap 30)" "$bin/tracker_nccl" hold "$kind" "$dir" \
    >"$dir/run.log" 2>&1
  rc=$?
  limit=$(((hang_ms + pass_ms) * 11 / 10))
  detected=$(sed -n 's/^detected_ms=//p' "$dir/run.log")
  dumps=$(find "$dir" -maxdepth 1 -name 'ncclshim-record-*.jsonl' | wc -l)
  line=$(grep "^ncclshim recorder: wrote .*(hang: ncclAllReduce #" "$dir/run.log")
  # The first held all-reduce is #5: named alone, or within the operations under one event.
  read -r first last <<<"$(hang_range "$line")"
  why=$(exit_why "$rc" "$dir/run.log")
  if [ -n "$detected" ]; then
    [ "$dumps" = 1 ] || why+="$dumps dumps; "
    grep -q '"reason":"hang"' "$dir"/ncclshim-record-*.jsonl 2>/dev/null || why+="no hang dump; "
    [ "$(grep -c . <<<"$line")" = 1 ] || why+="not one stderr line of the hang dump; "
    [ "$first" != "?" ] && [ "$first" -le 5 ] && [ "$last" -ge 5 ] ||
      why+="stderr names #$first-#$last, not #5; "
    [ "${detected%.*}" -ge $((hang_ms - 2)) ] 2>/dev/null && [ "${detected%.*}" -le "$limit" ] ||
      why+="detected after $detected ms ($hang_ms .. $limit wanted); "
    grep -q '^gave_up=1$' "$dir/run.log" && why+="the kernel hit its own limit; "
  fi
  [ -n "$detected" ] || [ "$rc" != 0 ] || why+="no detected_ms line; "
  [ -n "$why" ] && tail -n 5 "$dir/run.log"
  row "$name" "$(verdict "$why")" "detected after ${detected:-?} ms (limit $limit): ${line#*(}"
}

step "churn-preload, churn-audit"
for how in preload audit; do
  no_false_dump "churn-$how" "$how" 500 "$bin/tracker_nccl" churn 200 "$out/churn-$how"
done
step hold-dump
for how in preload audit; do
  for k in "${kinds[@]}"; do hold_dump "$how" "$k"; done
done

# ---- cost ---------------------------------------------------------------------------------
step cost
NCCLSHIM_NCCL_LIBRARY=$sys_nccl timeout -k 5 "$(cap 60)" "$bin/tracker_comm" cost 20000 \
  >"$out/cost-comm.csv" 2>"$out/cost-comm.log" ||
  say "tracker_comm cost: $(ended $?): $(tail -1 "$out/cost-comm.log")"
on=() off=()
for rep in 1 2 3; do
  for hang in off on; do
    extra=()
    [ $hang = on ] && extra=(NCCLSHIM_RECORD_HANG_MS=60000)
    f=$out/cost-dropin-$hang-$rep.csv
    env LD_PRELOAD="$dropin" NCCLSHIM_RECORD=1000 NCCLSHIM_RECORD_DIR="$out" "${extra[@]}" \
      timeout -k 5 "$(cap 30)" "$bin/tracker_nccl" cost 8192 >"$f" 2>&1 ||
      say "tracker_nccl cost (hang dump $hang): $(ended $?): $(grep -m1 '^failed=' "$f")"
    if [ $hang = on ]; then on+=("$f"); else off+=("$f"); fi
  done
done
python3 tests/gpu/track/tracker_cost.py "$out/cost.csv" "$out/cost-comm.csv" --on "${on[@]}" \
  --off "${off[@]}" | tee -a "$out/summary.txt"
cost_verdict=$(sed -n 's/^cost: //p' "$out/summary.txt" | tail -1)
cost_verdict=${cost_verdict:-FAIL}
[ -z "$(find "$out" -maxdepth 1 -name 'ncclshim-record-*')" ] ||
  say "cost: a dump was written (see $out)"

# ---- CuPy ---------------------------------------------------------------------------------
step "cupy-preload, cupy-audit"
if [ -x "$python" ]; then
  for how in preload audit; do
    no_false_dump "cupy-$how" "$how" 500 "$python" tests/gpu/track/tracker_cupy.py --rounds 100 \
      --dir "$out/cupy-$how" --wait-ms
  done
else
  row cupy-preload "FAIL: no $python" ""
  row cupy-audit "FAIL: no $python" ""
fi

# ---- the graph cases ----------------------------------------------------------------------
step graphs
gb=$(($(time_left) - 10))
[ "$gb" -gt 88 ] && gb=88
if [ "$gb" -lt 30 ]; then
  row graphs-all "FAIL: not run ($gb s left)" ""
else
  OUT=$out BUDGET_S=$gb timeout -k 5 $((gb + 5)) bash tests/gpu/comm/graphs.sh >"$out/graphs.log" 2>&1
  say "graphs.sh: $(ended $?)"
  got=$out/graphs/graphs.csv
  [ -f "$got" ] || echo "case,verdict,nccl,ms,limit_ms,detail" >"$got"
  while IFS=, read -r c v n ms lim detail; do
    row "graphs-$c-$n" "$v" "ms $ms (limit $lim): $detail"
  done < <(tail -n +2 "$got")
  while IFS=, read -r c _ n _; do
    [ "$n" = 2.29.7 ] && [ -z "${NCCL_2297:-}" ] && continue
    grep -q "^$c,[^,]*,$n," "$got" || row "graphs-$c-$n" "FAIL: not in this run" \
      "bench/results/h200/watchdog/graphs.csv has it"
  done < <(tail -n +2 bench/results/h200/watchdog/graphs.csv)
fi
finish
