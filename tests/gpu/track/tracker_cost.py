"""The tracker's cost table (tests/gpu/track/tracker.sh): cost.csv and its verdicts.

  tracker_cost.py OUT_CSV COMM_ROWS --on ON_ROWS... --off OFF_ROWS...

COMM_ROWS holds tracker_comm cost's rows (stream,what,ns: event_record, record,
record_minus_event_record, enqueue, and any,clock), each a median of one
process's paired, call-by-call timings. ON_ROWS and OFF_ROWS hold tracker_nccl
cost's rows (stream,dropin_minus_direct,ns), one file per process, run under
LD_PRELOAD of the drop-in with NCCLSHIM_RECORD_HANG_MS set (on) and unset
(off): the median over a process's pairs of (the call through the drop-in - the
same call straight into NCCL). A process cannot turn the hang dump on and off
(the drop-in reads it when it loads), so hang_call is the median of the on
processes' figures less the median of the off processes': what the hang dump
adds to a call, each figure already relative to the direct call of its own
process.

Writes OUT_CSV (stream,what,ns): per stream kind (created, legacy, per-thread)
event_record, record, hang_call, then record_minus_event_record, enqueue,
dropin_hang_on, dropin_hang_off; and any,clock. Prints one verdict line per
kind (record and hang_call each at most event_record + 50 ns) and exits 0 when
every kind passes, 1 otherwise.
"""
import statistics
import sys

KINDS = ("created", "legacy", "per-thread")
MARGIN_NS = 50


def read_rows(path):
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) != 3:
                    continue
                try:
                    rows[(parts[0], parts[1])] = float(parts[2])
                except ValueError:
                    continue
    except OSError:
        pass
    return rows


def split_args(args):
    """COMM --on A B --off C D: (comm, [A, B], [C, D])."""
    comm, on, off, into = None, [], [], None
    for a in args:
        if a == "--on":
            into = on
        elif a == "--off":
            into = off
        elif into is None and comm is None:
            comm = a
        elif into is not None:
            into.append(a)
        else:
            raise SystemExit("unexpected argument: " + a)
    if comm is None:
        raise SystemExit(__doc__)
    return comm, on, off


def median_of(files, kind):
    values = [r[(kind, "dropin_minus_direct")] for r in map(read_rows, files)
              if (kind, "dropin_minus_direct") in r]
    return (statistics.median(values), values) if values else (None, [])


def fmt(ns):
    return "" if ns is None else "%.1f" % ns


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    out_csv = argv[0]
    comm_path, on_files, off_files = split_args(argv[1:])
    comm = read_rows(comm_path)
    lines, extra, verdicts, bad = ["stream,what,ns"], [], [], 0
    for kind in KINDS:
        event = comm.get((kind, "event_record"))
        record = comm.get((kind, "record"))
        on, on_values = median_of(on_files, kind)
        off, off_values = median_of(off_files, kind)
        hang = on - off if on is not None and off is not None else None
        for what, ns in (("event_record", event), ("record", record),
                         ("hang_call", hang)):
            lines.append("%s,%s,%s" % (kind, what, fmt(ns)))
        for what in ("record_minus_event_record", "enqueue"):
            extra.append("%s,%s,%s" % (kind, what, fmt(comm.get((kind, what)))))
        extra.append("%s,dropin_hang_on,%s" % (kind, fmt(on)))
        extra.append("%s,dropin_hang_off,%s" % (kind, fmt(off)))
        parts = []
        for what, ns in (("record", record), ("hang_call", hang)):
            if ns is None or event is None:
                parts.append("%s: no figure" % what)
                bad += 1
                continue
            ok = ns <= event + MARGIN_NS
            bad += not ok
            parts.append("%s %.1f %s event_record %.1f + %d: %s" % (
                what, ns, "<=" if ok else ">", event, MARGIN_NS,
                "PASS" if ok else "FAIL"))
        verdicts.append("%s: %s (hang on %s / off %s ns per process)" % (
            kind, "; ".join(parts), " ".join(fmt(v) for v in on_values),
            " ".join(fmt(v) for v in off_values)))
    clock = comm.get(("any", "clock"))
    extra.append("any,clock,%s" % fmt(clock))
    with open(out_csv, "w") as f:
        f.write("\n".join(lines + extra) + "\n")
    for v in verdicts:
        print(v)
    print("cost: %s" % ("PASS" if bad == 0 else "FAIL (%d figures)" % bad))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
