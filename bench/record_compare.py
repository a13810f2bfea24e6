#!/usr/bin/env python3
"""ncclshim-record-compare on generated dumps: wall time, peak RSS and output size.

    python3 bench/record_compare.py [CSV]        (default bench/results/recorder-compare-vm.csv)

Cases (each dump generated in a temporary directory, in the format of docs/dropin.md):
  one-18mb        one process's dump: 5,000 two-rank communicators x 10 all-reduces (~18 MB)
  two-18mb        both ranks of those communicators, rank 1 a step behind on one (~36 MB)
  ranks-10000     10,000 one-communicator dumps, half the ranks one step behind
  calls-1m        one dump of 1,000,000 calls on one communicator (~350 MB)
CSV columns: case,dump_mb,largest_mb,seconds (wall),cpu_seconds (user + system: the measure on a
shared machine),max_rss_mb,rss_over_largest,output_kb,exit.
The goals: one-18mb <= 2 s; RSS <= 3x the largest dump; output linear in ranks.
"""
import os
import subprocess
import sys
import tempfile
import time

COMPARE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "dropin",
                       "ncclshim-record-compare")


RUNNER = """import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=sys.stdout.buffer, stderr=subprocess.STDOUT)
sys.stdout.flush()
u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write("\\nmax_rss_kib=%d,%d,%.3f" % (u.ru_maxrss, p.returncode, u.ru_utime + u.ru_stime))
"""


def header(process, rank, calls):
    return ('{"kind":"header","format":"ncclshim-record/2","host":"bench","pid":%d,'
            '"process":"%016x","boot_id":"b","rank":%d,"reason":"signal","signal":15,'
            '"nccl_version":22809,"capacity":%d,"calls":%d,"suppressed_dumps":0,'
            '"time_ns":1764490000123456789}\n' % (1000 + process, process + 1, rank, calls, calls))


def comm(cid, rank, nranks, last):
    return ('{"kind":"comm","comm":"c-%016x","comm_id":"%016x","rank":%d,"nranks":%d,'
            '"last_seq":%d,"last_coll":%d,"created_by":"ncclCommInitRank","async_error":0}\n'
            % (cid, cid, rank, nranks, last, last))


def call(index, cid, rank, seq):
    return ('{"kind":"call","index":%d,"function":"ncclAllReduce","comm":"c-%016x",'
            '"comm_id":"%016x","rank":%d,"seq":%d,"coll":%d,"count":1048576,"datatype":7,'
            '"datatype_name":"ncclFloat32","op":0,"op_name":"ncclSum",'
            '"stream":"s-6e3ddc9ac37043d5","thread":4242,"start_ns":1764490000100000000,'
            '"result":0,"result_name":"ncclSuccess","state":"returned"}\n'
            % (index, cid, cid, rank, seq, seq))


def write_dump(path, process, rank, comms, calls_per_comm, nranks=2, behind=()):
    """`behind`: communicators on which this rank issued one call fewer."""
    with open(path, "w") as f:
        f.write(header(process, rank, comms * calls_per_comm))
        last = {c: calls_per_comm - (1 if c in behind else 0) for c in range(comms)}
        for c in range(comms):
            f.write(comm(c + 1, rank, nranks, last[c]))
        index = 0
        for seq in range(1, calls_per_comm + 1):
            for c in range(comms):
                if seq <= last[c]:
                    f.write(call(index, c + 1, rank, seq))
                    index += 1


def measure(name, directory, out):
    sizes = [os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory)]
    # A fresh runner per case, so that its children's peak RSS is this compare's alone.
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", RUNNER, sys.executable, COMPARE, directory],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seconds = time.monotonic() - start
    output, _, rss_kib = proc.stdout.rpartition(b"\nmax_rss_kib=")
    fields = rss_kib.split(b",")
    proc.stdout, proc.returncode, cpu = output, int(fields[1]), float(fields[2])
    rss = int(fields[0]) / 1024
    largest = max(sizes) / 1e6
    row = "%s,%.1f,%.1f,%.2f,%.2f,%.0f,%.2f,%.0f,%d" % (
        name, sum(sizes) / 1e6, largest, seconds, cpu, rss, rss / (max(sizes) / 2 ** 20),
        len(proc.stdout) / 1024, proc.returncode)
    print(row, flush=True)
    print("  " + proc.stdout.decode(errors="replace").strip().splitlines()[-1][:160], flush=True)
    out.write(row + "\n")


def main():
    csv = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results", "recorder-compare-vm.csv")
    cases = sys.argv[2].split(",") if len(sys.argv) > 2 else [
        "one-18mb", "two-18mb", "ranks-10000", "calls-1m"]
    with open(csv, "w") as out, tempfile.TemporaryDirectory(prefix="compare-bench-") as tmp:
        out.write("case,dump_mb,largest_mb,seconds,cpu_seconds,max_rss_mb,rss_over_largest,"
                  "output_kb,exit\n")
        for name in cases:
            d = os.path.join(tmp, name)
            os.mkdir(d)
            if name == "one-18mb":
                write_dump(os.path.join(d, "ncclshim-record-r0.jsonl"), 0, 0, 5000, 10)
            elif name == "two-18mb":
                write_dump(os.path.join(d, "ncclshim-record-r0.jsonl"), 0, 0, 5000, 10)
                write_dump(os.path.join(d, "ncclshim-record-r1.jsonl"), 1, 1, 5000, 10,
                           behind={4999})
            elif name == "ranks-10000":
                for r in range(10000):
                    write_dump(os.path.join(d, "ncclshim-record-r%d.jsonl" % r), r, r, 1, 10,
                               nranks=10000, behind={0} if r % 2 else ())
            elif name == "calls-1m":
                write_dump(os.path.join(d, "ncclshim-record-r0.jsonl"), 0, 0, 1, 1000000,
                           nranks=1)
            measure(name, d, out)
            for n in os.listdir(d):
                os.unlink(os.path.join(d, n))


if __name__ == "__main__":
    main()
