#!/usr/bin/env python3
"""Medians, spreads and ratios of the benchmark CSVs of one host, written next to them.
   summarize.py RESULTS_DIR HOST"""
import csv
import os
import statistics
import sys
from collections import defaultdict

results, host = sys.argv[1], sys.argv[2]


def rows(name):
    path = os.path.join(results, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def write(name, header, table):
    with open(os.path.join(results, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(table)
    print("\n" + name)
    for r in [header] + table:
        print("  " + "  ".join("%-14s" % c for c in r))


calls = defaultdict(list)
for r in rows("call-cost-%s.csv" % host):
    calls[r["way"]].append(float(r["ns_per_call"]))
if calls:
    med = {w: statistics.median(v) for w, v in calls.items()}
    table = []
    for way in ("direct", "dlsym", "table", "dropin"):
        if way in med:
            v = calls[way]
            table.append([way, "%.3f" % med[way], "%.3f" % min(v), "%.3f" % max(v),
                          "%.3f" % (med[way] / med["direct"]), "%.3f" % (med[way] / med["dlsym"]),
                          len(v)])
    write("call-cost-summary-%s.csv" % host,
          ["way", "median_ns", "min_ns", "max_ns", "vs_direct", "vs_dlsym", "samples"], table)

init = defaultdict(lambda: defaultdict(list))
for r in rows("init-cost-%s.csv" % host):
    init[r["library"]][r["way"]].append(float(r["us"]))
if init:
    table = []
    for lib, ways in init.items():
        raw, shim = statistics.median(ways["raw"]), statistics.median(ways["shim"])
        table.append([os.path.basename(lib), lib, "%.1f" % raw, "%.1f" % shim,
                      "%.3f" % (shim / raw),
                      len(ways["shim"])])
    write("init-cost-summary-%s.csv" % host,
          ["library", "path", "raw_median_us", "shim_median_us", "shim_vs_raw", "samples"], table)

coll = defaultdict(list)
for r in rows("allreduce-%s.csv" % host):
    key = (r["nccl"], r["variant"], int(r["bytes"]))
    coll[key].append((float(r["us"]), float(r["busbw_GBps"])))
if coll:
    table = []
    # Each row is one process's median; small messages differ from process to process, so
    # both the median over processes and the best process are compared with direct.
    for (nccl, variant, size) in sorted(coll):
        runs = coll[(nccl, variant, size)]
        us = statistics.median(x[0] for x in runs)
        best = min(x[0] for x in runs)
        bw = statistics.median(x[1] for x in runs)
        direct = coll.get((nccl, "direct", size))
        ratio = us / statistics.median(x[0] for x in direct) if direct else float("nan")
        best_ratio = best / min(x[0] for x in direct) if direct else float("nan")
        table.append([nccl, variant, size, "%.3f" % us, "%.2f" % bw, "%.4f" % ratio,
                      "%.3f" % best, "%.4f" % best_ratio, len(runs)])
    write("allreduce-summary-%s.csv" % host,
          ["nccl", "variant", "bytes", "median_us", "busbw_GBps", "time_vs_direct", "best_us",
           "best_vs_direct", "processes"], table)
