"""Summary of bench/gpu/percall.sh's CSVs: summary.csv and ratios.md in the same folder.

    python3 bench/gpu/percall_summary.py DIR

summary.csv: the median over rounds of each (NCCL, build, variant, size). ratios.md: the goals
for the cost of hang detection, each ratio taken inside one process (one round of one build)
and then its median over rounds, with the lowest and highest round beside it; the detection of
a stopped rank; the bounded wait's lateness on the CPU.
"""
import csv
import os
import statistics
import sys

GOAL = 1.05
# (label, build, numerator, denominator): every pair runs in one process.
RATIOS = [
    ("watchdog / blocking", "shim", "watchdog", "blocking"),
    ("nonblocking / spin", "shim", "nonblocking", "spin"),
    ("table / blocking", "shim", "table", "blocking"),
    ("dropin / blocking", "dropin", "dropin", "blocking"),
]
# (column, build, variant, field): the times shown. The enqueue columns: until
# ncclCommGetAsyncError stopped saying ncclInProgress.
TIMES = [
    ("blocking", "shim", "blocking", "us_median"),
    ("spin", "shim", "spin", "us_median"),
    ("table", "shim", "table", "us_median"),
    ("nonblocking", "shim", "nonblocking", "us_median"),
    ("watchdog", "shim", "watchdog", "us_median"),
    ("dropin", "dropin", "dropin", "us_median"),
    ("blocking, linked", "direct", "blocking", "us_median"),
    ("spin, enqueue", "shim", "spin", "enqueue_us_median"),
    ("nonblocking, enqueue", "shim", "nonblocking", "enqueue_us_median"),
]


def read(path):
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def percall_tables(out):
    rows = read(os.path.join(out, "percall.csv"))
    runs = {}  # (nccl, build, variant, bytes) -> {round: row}
    for r in rows:
        key = (r["nccl"], r["build"], r["variant"], int(r["bytes"]))
        runs.setdefault(key, {})[r["round"]] = r
    with open(os.path.join(out, "summary.csv"), "w") as f:
        f.write("nccl,build,variant,bytes,us,enqueue_us,rounds\n")
        for key, by_round in sorted(runs.items()):
            us = statistics.median(float(r["us_median"]) for r in by_round.values())
            enq = [float(r["enqueue_us_median"]) for r in by_round.values()
                   if r["enqueue_us_median"]]
            enq_text = "%.3f" % statistics.median(enq) if enq else ""
            f.write("%s,%s,%s,%d,%.3f,%s,%d\n" % (key + (us, enq_text, len(by_round))))

    def time(nccl, build, variant, size, field):
        by_round = runs.get((nccl, build, variant, size), {})
        xs = [float(r[field]) for r in by_round.values() if r[field]]
        return statistics.median(xs) if xs else None

    def ratio(nccl, build, num, den, size):
        a, b = runs.get((nccl, build, num, size), {}), runs.get((nccl, build, den, size), {})
        xs = sorted(float(a[k]["us_median"]) / float(b[k]["us_median"]) for k in a if k in b)
        if not xs:
            return "-"
        mid = statistics.median(xs)
        return f"{mid:.3f}" + (" **over**" if mid > GOAL else "") + \
            (f" ({xs[0]:.2f}–{xs[-1]:.2f})" if len(xs) > 1 else "")

    lines = ["# Per-call time (us, median over rounds) and the cost ratios of hang detection", "",
             "Each ratio is taken inside one process, then its median over rounds "
             "(lowest–highest round in brackets). 'blocking, linked' is the direct build's "
             "blocking call (linked with -lnccl), a check that the in-process baseline, called "
             "through dlsym's address, costs the same.", ""]
    for nccl in sorted({k[0] for k in runs}):
        sizes = sorted({k[3] for k in runs if k[0] == nccl})
        lines += [f"## NCCL {nccl}", "", "| bytes | " + " | ".join(t[0] for t in TIMES) + " |",
                  "|---" * (len(TIMES) + 1) + "|"]
        for size in sizes:
            lines.append(f"| {size} | " + " | ".join(fmt(time(nccl, b, v, size, field))
                                                     for _, b, v, field in TIMES) + " |")
        lines += ["", "| bytes | " + " | ".join(r[0] for r in RATIOS) + " |",
                  "|---" * (len(RATIOS) + 1) + "|"]
        for size in sizes:
            lines.append(f"| {size} | " + " | ".join(ratio(nccl, b, n, d, size)
                                                     for _, b, n, d in RATIOS) + " |")
        lines.append("")
    return lines


def detect_table(out):
    rows = read(os.path.join(out, "detect.csv"))
    if not rows:
        return []
    lines = ["## A stopped rank", "", "| nccl | mode | deadline ms | detected ms | ratio | "
             "stream released ms | within +10 % |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ok = "yes" if float(r["ratio"]) <= 1.10 else "**no**"
        lines.append(f"| {r['nccl']} | {r['mode']} | {r['deadline_ms']} | {r['detected_ms']} | "
                     f"{r['ratio']} | {r['released_ms']} | {ok} |")
    return lines + [""]


def wait_cost_table(out):
    rows = read(os.path.join(out, "wait-cost.csv"))
    if not rows:
        return []
    lines = ["## The bounded wait on the CPU (fake work ending at a set time)", "",
             "| pacing | wait us | goal us | median late us | p90 late us | CPU share |",
             "|---|---|---|---|---|---|"]
    for pacing in ("default", "spin0"):
        for us in sorted({int(r["wait_us"]) for r in rows if r["pacing"] == pacing}):
            sel = [r for r in rows if r["pacing"] == pacing and int(r["wait_us"]) == us]
            late = sorted(int(r["overshoot_ns"]) / 1000 for r in sel)
            cpu = statistics.median(float(r["cpu"]) for r in sel)
            lines.append(f"| {pacing} | {us} | {max(2, us * 0.05):.1f} | "
                         f"{statistics.median(late):.2f} | "
                         f"{late[int(0.9 * (len(late) - 1))]:.2f} | {cpu:.2f} |")
    return lines + [""]


def main():
    out = sys.argv[1]
    lines = percall_tables(out) + detect_table(out) + wait_cost_table(out)
    open(os.path.join(out, "ratios.md"), "w").write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
