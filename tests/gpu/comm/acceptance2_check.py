"""The verdicts of tests/gpu/comm/acceptance2.sh that need arithmetic:

    python3 acceptance2_check.py percall DIR NCCL...
    python3 acceptance2_check.py nccltests DIRECT_LOG... -- DROPIN_LOG...

percall: DIR/percall.csv of bench/gpu/percall.sh (round,build,variant,nccl,bytes,...). For
each NCCL version named, every size from 8 B to 1 GiB must be there, and at each size
watchdog / blocking and nonblocking / spin (shim build), each the ratio of one process's
medians, then the median over rounds, must be at most 1.05.
nccltests: nccl-tests outputs (one test, several runs each way). At each size above 1 MiB the
best out-of-place busbw of the drop-in runs over the best of the direct ones must be at least
0.99, and no run may report a wrong result.
Prints one line: VERDICT|FIGURES (verdict ok or FAIL: why; figures with no comma)."""
import csv
import statistics
import sys

GOAL = 1.05
MIN_BYTES, MAX_BYTES = 8, 1 << 30
RATIOS = [("watchdog/blocking", "watchdog", "blocking"),
          ("nonblocking/spin", "nonblocking", "spin")]
BUSBW_GOAL, ABOVE = 0.99, 1 << 20


def percall(folder, ncclses):
    try:
        rows = list(csv.DictReader(open(folder + "/percall.csv")))
    except OSError as e:
        return "FAIL: no percall.csv (%s)" % e.strerror, ""
    us = {}  # (nccl, variant, bytes) -> {round: us}
    for r in rows:
        if r["build"] == "shim":
            us.setdefault((r["nccl"], r["variant"], int(r["bytes"])), {})[r["round"]] = \
                float(r["us_median"])
    why, figures = [], []
    for nccl in ncclses:
        sizes = sorted({k[2] for k in us if k[0] == nccl})
        if not sizes or sizes[0] > MIN_BYTES or sizes[-1] < MAX_BYTES:
            why.append("%s: sizes %s..%s, not 8..%d" % (
                nccl, sizes[0] if sizes else "-", sizes[-1] if sizes else "-", MAX_BYTES))
            continue
        for label, num, den in RATIOS:
            worst = (0.0, 0, 0)
            for size in sizes:
                a, b = us.get((nccl, num, size), {}), us.get((nccl, den, size), {})
                xs = [a[k] / b[k] for k in a if k in b]
                if not xs:
                    why.append("%s %s: no pair at %d B" % (nccl, label, size))
                    break
                worst = max(worst, (statistics.median(xs), size, len(xs)))
            figures.append("%s %s max %.3f at %d B (%d rounds)" % ((nccl, label) + worst))
            if worst[0] > GOAL:
                why.append("%s %s %.3f at %d B" % (nccl, label, worst[0], worst[1]))
    return ("FAIL: " + "; ".join(why) if why else "ok"), "; ".join(figures)


def busbw(paths):
    """size -> best out-of-place busbw over the runs; and the count of wrong results."""
    best, wrong = {}, 0
    for path in paths:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = line.split()
            # size count type redop root | time algbw busbw #wrong | (in place) ...
            if len(f) < 13 or not f[0].isdigit() or not f[1].isdigit():
                continue
            best[int(f[0])] = max(best.get(int(f[0]), 0.0), float(f[7]))
            wrong += sum(int(x) for x in (f[8], f[12]) if x.isdigit())
    return best, wrong


def nccltests(direct_paths, dropin_paths):
    direct, wrong_direct = busbw(direct_paths)
    dropin, wrong_dropin = busbw(dropin_paths)
    sizes = sorted(s for s in direct if s > ABOVE and s in dropin)
    why = []
    if not sizes:
        return "FAIL: no sizes above 1 MiB in both outputs", ""
    if max(direct) < MAX_BYTES or max(dropin) < MAX_BYTES:
        why.append("largest size %d / %d B, not 1 GiB" % (max(direct), max(dropin)))
    if wrong_direct or wrong_dropin:
        why.append("wrong results: %d direct %d drop-in" % (wrong_direct, wrong_dropin))
    ratios = [(dropin[s] / direct[s] if direct[s] else 0.0, s) for s in sizes]
    low = min(ratios)
    if low[0] < BUSBW_GOAL:
        why.append("busbw ratio %.3f at %d B" % low)
    top = sizes[-1]
    figures = "min ratio %.3f at %d B; at %d B %.1f vs %.1f GB/s" % (
        low + (top, dropin[top], direct[top]))
    return ("FAIL: " + "; ".join(why) if why else "ok"), figures


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "percall":
        verdict, figures = percall(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) >= 5 and sys.argv[1] == "nccltests" and "--" in sys.argv:
        split = sys.argv.index("--")
        verdict, figures = nccltests(sys.argv[2:split], sys.argv[split + 1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("%s|%s" % (verdict.replace(",", ";"), figures.replace(",", ";")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
