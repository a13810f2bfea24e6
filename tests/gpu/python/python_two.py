"""ncclshim's Python communicator across two processes, one per GPU, run by
tests/gpu/comm/acceptance2.sh in the torch venv:

    python_two.py OUTDIR                       starts both ranks, merges their rows
    python_two.py OUTDIR --rank R --uid FILE   one rank (rank 0 writes the unique id to FILE)

Each rank, on GPU R, with a two-rank ncclshim.Communicator (split-blocking), checks every
collective's result against what the other rank sent (all_reduce, broadcast, reduce,
all_gather, reduce_scatter, all_to_all, gather, scatter, send/recv); a graph replay (an
all_reduce captured in torch.cuda.graph, watched, each replay recorded with record_graph, on
new data); and the pynccl-style comparison (tests/gpu/python/pynccl_style.py, here on a two-rank
communicator, a unique id of its own; PYNCCL_LIBRARY names its libnccl): host time per
all_reduce, the two taking turns call by call, ratio <= 1.05 at each size. Writes
OUTDIR/rank<R>.csv (case,verdict,detail), OUTDIR/percall-rank<R>.csv and, from the launcher,
OUTDIR/summary.csv (rank,case,verdict,detail); prints result=ok|FAIL: ... and exits 0 only
when every row of both ranks is ok."""
import csv
import ctypes
import os
import statistics
import subprocess
import sys

import uid_file

N = 4096
NRANKS = 2
SIZES = [8, 4096, 262144, 2097152, 67108864]


def launcher(out):
    uid = os.path.join(out, "uid")
    for path in (uid, uid + "-pynccl"):
        if os.path.exists(path):
            os.remove(path)
    procs = [subprocess.Popen([sys.executable, __file__, out, "--rank", str(r), "--uid", uid],
                              stdout=open(os.path.join(out, "rank%d.log" % r), "w"),
                              stderr=subprocess.STDOUT) for r in range(NRANKS)]
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=float(os.environ.get("PY_TWO_TIMEOUT_S", "150"))))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    rows = []
    for r in range(NRANKS):
        path = os.path.join(out, "rank%d.csv" % r)
        if os.path.exists(path):
            rows += [[r] + row for row in csv.reader(open(path))][1:]
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rank", "case", "verdict", "detail"])
        w.writerows(rows)
    bad = [row for row in rows if row[2] != "ok"]
    ranks_seen = {row[0] for row in rows}
    why = []
    if codes != [0] * NRANKS:
        why.append("exit statuses %s" % codes)
    if len(ranks_seen) != NRANKS:
        why.append("rows from %d ranks" % len(ranks_seen))
    if bad:
        why.append("%d rows not ok, first: rank %s %s: %s" % (len(bad), *bad[0][:3]))
    ok = sum(row[2] == "ok" for row in rows)
    ratios = [row[3] for row in rows if row[0] == 0 and row[1].startswith("percall-")]
    print("rows_ok=%d rows=%d" % (ok, len(rows)))
    print("percall_rank0=%s" % "; ".join(ratios))
    print("result=%s" % ("FAIL: " + "; ".join(why) if why else "ok"))
    return 1 if why else 0


def share_uid(rank, path, ncclshim):
    if rank == 0:
        uid = ncclshim.unique_id()
        uid_file.publish(path, uid)
        return uid
    return uid_file.wait_for(path, rank)


def one_rank(out, rank, uid_path):
    import torch

    import ncclshim
    from pynccl_style import FUNCTIONS, PyNcclStyle, ncclComm_t, ncclUniqueId

    class PyNcclTwo(PyNcclStyle):
        """pynccl_style's wrapper, its communicator made of the ranks' shared unique id."""

        def __init__(self, path, rank, uid):
            self.lib = ctypes.CDLL(path)
            for name, restype, argtypes in FUNCTIONS:
                fn = getattr(self.lib, name)
                fn.restype, fn.argtypes = restype, argtypes
            ident = ncclUniqueId.from_buffer_copy(uid)
            self.comm = ncclComm_t()
            self.check(self.lib.ncclCommInitRank(ctypes.byref(self.comm), NRANKS, ident, rank))

    torch.cuda.set_device(rank)
    rows = []

    def note(case, verdict, detail=""):
        rows.append((case, verdict, detail))
        print("rank %d %-22s %s %s" % (rank, case, verdict, detail), flush=True)

    def run(case, fn):
        try:
            note(case, "ok", fn() or "")
        except Exception as e:  # a case's failure is its verdict
            note(case, "FAIL: %s: %s" % (type(e).__name__, str(e).replace("\n", " ")[:300]))

    def data(r, n=N):  # what rank r sends: distinct per rank and per element
        return (torch.arange(n, dtype=torch.float32, device="cuda") + 1) * (r + 1)

    s = torch.cuda.Stream()
    comm = ncclshim.Communicator(NRANKS, rank, share_uid(rank, uid_path, ncclshim), timeout=20)
    mine, other = data(rank), data(1 - rank)
    both = torch.cat([data(0), data(1)])
    both2 = [torch.cat([data(r, N), data(r, N) + 0.5]) for r in range(NRANKS)]  # 2N per rank

    def check(name, call, make_recv, expected, only_root=False):
        def one():
            y = make_recv()
            torch.cuda.synchronize()
            call(y)
            s.synchronize()
            if only_root and rank != 0:
                return "not the root"
            if not torch.equal(y, expected):
                bad = (y != expected).nonzero()[:1].tolist()
                raise AssertionError("differs at %s: %s" % (bad, y.flatten()[:4].tolist()))
            return "%d elements" % y.numel()
        run(name, one)

    zeros = torch.zeros
    check("all_reduce", lambda y: comm.all_reduce(mine, y, stream=s),
          lambda: zeros(N, device="cuda"), data(0) + data(1))
    check("broadcast", lambda y: comm.broadcast(mine, y, root=0, stream=s),
          lambda: zeros(N, device="cuda"), data(0))
    check("reduce", lambda y: comm.reduce(mine, y, root=0, op="max", stream=s),
          lambda: zeros(N, device="cuda"), data(1), only_root=True)
    check("all_gather", lambda y: comm.all_gather(mine, y, stream=s),
          lambda: zeros(2 * N, device="cuda"), both)
    check("reduce_scatter", lambda y: comm.reduce_scatter(both2[rank], y, stream=s),
          lambda: zeros(N, device="cuda"), (both2[0] + both2[1])[rank * N:(rank + 1) * N])
    check("all_to_all", lambda y: comm.all_to_all(both2[rank], y, stream=s),
          lambda: zeros(2 * N, device="cuda"),
          torch.cat([both2[r][rank * N:(rank + 1) * N] for r in range(NRANKS)]))
    check("gather", lambda y: comm.gather(mine, y, root=0, stream=s),
          lambda: zeros(2 * N, device="cuda"), both, only_root=True)
    check("scatter", lambda y: comm.scatter(both2[0] if rank == 0 else None, y, root=0,
                                            stream=s),
          lambda: zeros(N, device="cuda"), both2[0][rank * N:(rank + 1) * N])

    def send_recv(y):
        with comm.group():
            comm.send(mine, peer=1 - rank, stream=s)
            comm.recv(y, peer=1 - rank, stream=s)
    check("send_recv", send_recv, lambda: zeros(N, device="cuda"), other)
    run("graph-replay", lambda: graph_replay(torch, ncclshim, comm, rank))
    # A unique id makes one communicator: the wrapper's is a second one, from rank 0 too.
    theirs = PyNcclTwo(os.environ["PYNCCL_LIBRARY"], rank,
                       share_uid(rank, uid_path + "-pynccl", ncclshim))
    percall(torch, comm, theirs, rank, out, note)
    theirs.close()
    comm.close()
    with open(os.path.join(out, "rank%d.csv" % rank), "w", newline="") as f:
        csv.writer(f).writerows([("case", "verdict", "detail")] + rows)
    return 0 if all(r[1] == "ok" for r in rows) else 1


def graph_replay(torch, ncclshim, comm, rank):
    """An all_reduce captured in torch.cuda.graph, replayed watched on new data."""
    from capture import captured_all_reduce
    x = torch.zeros(N, device="cuda")
    y = torch.zeros(N, device="cuda")
    with ncclshim.Watchdog(interval=0.01) as dog:
        comm.watch(dog, timeout=5)
        g = captured_all_reduce(torch, comm, x, y)
        for k in (2.0, 5.0, 9.0):
            x.fill_(k * (rank + 1))
            g.replay()
            comm.record_graph(torch.cuda.current_stream(), "two-rank", 1)
            torch.cuda.synchronize()
            assert bool((y == 3 * k).all()), "replay %s gave %s" % (k, y[:4].tolist())
        assert comm.state == "ready" and not dog.failures, (comm.state, dog.failures)
        del g
        comm.unwatch()
    return "3 watched replays, each sum checked"


def percall(torch, ours, theirs, rank, out, note):
    """Host time per all_reduce, ncclshim's against pynccl-style, taking turns call by call
    (both ranks run the same sequence)."""
    from pynccl_style import take_turns
    s = torch.cuda.Stream()
    path = os.path.join(out, "percall-rank%d.csv" % rank)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["bytes", "reps", "ncclshim_us", "pynccl_us", "ratio"])
        for size in SIZES:
            n = max(2, size // 4)
            x = torch.ones(n, device="cuda")
            y = torch.zeros(n, device="cuda")
            reps = 3000
            t_ours, t_theirs = take_turns(ours, theirs, x, y, s, reps)
            mo, mt = statistics.median(t_ours) / 1e3, statistics.median(t_theirs) / 1e3
            w.writerow([size, reps, "%.3f" % mo, "%.3f" % mt, "%.4f" % (mo / mt)])
            note("percall-%d" % size, "ok" if mo / mt <= 1.05 else "FAIL: ratio > 1.05",
                 "%.3f (%.2f vs %.2f us)" % (mo / mt, mo, mt))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if len(sys.argv) == 2:
        return launcher(out)
    if len(sys.argv) != 6 or sys.argv[2] != "--rank" or sys.argv[4] != "--uid":
        raise SystemExit("usage: python_two.py OUTDIR [--rank R --uid FILE]")
    rank, uid_path = int(sys.argv[3]), sys.argv[5]
    return one_rank(out, rank, uid_path)


if __name__ == "__main__":
    sys.exit(main())
