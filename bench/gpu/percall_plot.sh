#!/usr/bin/env bash
# PNG plots of bench/gpu/percall.sh's summary.csv (gnuplot, Debian package gnuplot-nox), one
# per NCCL: time per call against message size for each variant (BUILD:VARIANT), log-log.
#   bench/gpu/percall_plot.sh DIR    (DIR holds summary.csv; the PNGs go beside it)
set -euo pipefail
cd "$1"
awk -F, 'NR > 1 {print $1}' summary.csv | sort -u | while IFS= read -r nccl; do
  gnuplot <<GP
set terminal pngcairo size 900,550 noenhanced
set output "percall-$nccl.png"
set datafile separator ","
set title "host-visible time per all-reduce call, float32 sum, 2 GPUs, NCCL $nccl"
set logscale x 2
set logscale y 10
set format x "%.0b%BB"
set xlabel "message size (bytes)"
set ylabel "us per call (median)"
set key top left
set grid
plot for [v in "shim:blocking shim:spin shim:table shim:nonblocking shim:watchdog dropin:dropin"] \
  "< awk -F, '\$1 == \"$nccl\" && \$2 \":\" \$3 == \"".v."\"' summary.csv" \
  using 4:5 with linespoints title v
GP
done
