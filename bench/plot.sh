#!/usr/bin/env bash
# PNG plots of the summaries of one host (gnuplot, Debian package gnuplot-nox):
# call-cost bars, and all-reduce bus bandwidth and latency against message size.
#   bench/plot.sh HOST
set -euo pipefail
cd "$(dirname "$0")/results"
host=$1
if [ -f "call-cost-summary-$host.csv" ]; then
  gnuplot <<GP
set terminal pngcairo size 800,500 noenhanced
set output "call-cost-$host.png"
set datafile separator ","
set title "ns per call of a no-op NCCL function ($host)"
set style data histograms
set style fill solid 0.8
set boxwidth 0.6
set ylabel "ns per call (median)"
set yrange [0:*]
unset key
plot "call-cost-summary-$host.csv" using 2:xtic(1) every ::1 lc rgb "#4477aa"
GP
fi
if [ -f "allreduce-summary-$host.csv" ]; then
  awk -F, 'NR > 1 {print $1}' "allreduce-summary-$host.csv" | sort -u | while read -r nccl; do
    for what in busbw latency; do
      col=$([ "$what" = busbw ] && echo 5 || echo 4)
      ylabel=$([ "$what" = busbw ] && echo "bus bandwidth (GB/s)" || echo "time per all-reduce (us)")
      gnuplot <<GP
set terminal pngcairo size 900,550 noenhanced
set output "allreduce-$what-$nccl-$host.png"
set datafile separator ","
set title "all-reduce float32 sum, 2 GPUs, NCCL $nccl ($host)"
set logscale x 2
set format x "%.0b%BB"
$([ "$what" = latency ] && echo 'set logscale y 10')
set xlabel "message size (bytes)"
set ylabel "$ylabel"
set key top left
set grid
plot for [v in "direct dropin table"] "< awk -F, '\$1 == \"$nccl\" && \$2 == \"".v."\"' allreduce-summary-$host.csv" using 3:$col with linespoints title v
GP
    done
  done
fi
ls -1 ./*.png 2>/dev/null
