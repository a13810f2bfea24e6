"""A 2-GPU all-reduce job that binds NCCL with ctypes, the way vLLM's pynccl does (a CDLL of
the library's path; ncclGetUniqueId, ncclCommInitRank, ncclAllReduce; the unique id a
128-byte structure passed by value), with the CUDA runtime through ctypes too for memory and
streams. LD_PRELOAD cannot see its calls; the drop-in's audit mode (LD_AUDIT) records them
(tests/gpu/dropin/recorder.sh).

    python3 ctypes_allreduce.py --nccl LIBNCCL --cudart LIBCUDART [--stop-rank R]
                                [--stop-after N] [--timeout S]

The launcher starts ranks 0 and 1 (one GPU each) and waits for them. Rank STOP_RANK stops
issuing after STOP_AFTER all-reduces; the other issues one more and waits in it. No signal
is sent from outside: each rank's own watchdog, TIMEOUT seconds after its last all-reduce
was issued, calls ncclCommAbort and then abort(), as PyTorch's watchdog does. Exit status: 0
when both ranks ended that way (or, without --stop-rank, both finished with right results),
1 otherwise, 77 with fewer than 2 GPUs.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def bind(nccl_path, cudart_path):
    nccl = ctypes.CDLL(nccl_path)
    cudart = ctypes.CDLL(cudart_path)
    p, i, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    for name, args in (("ncclGetUniqueId", [ctypes.POINTER(UniqueId)]),
                       ("ncclCommInitRank", [ctypes.POINTER(p), i, UniqueId, i]),
                       ("ncclAllReduce", [p, p, size, i, i, p, p]),
                       ("ncclCommAbort", [p]),
                       ("ncclCommDestroy", [p])):
        fn = getattr(nccl, name)
        fn.restype, fn.argtypes = ctypes.c_int, args
    for name, args in (("cudaSetDevice", [i]), ("cudaGetDeviceCount", [ctypes.POINTER(i)]),
                       ("cudaMalloc", [ctypes.POINTER(p), size]),
                       ("cudaMemcpy", [p, p, size, i]), ("cudaStreamCreate", [ctypes.POINTER(p)]),
                       ("cudaStreamSynchronize", [p])):
        fn = getattr(cudart, name)
        fn.restype, fn.argtypes = ctypes.c_int, args
    return nccl, cudart


def check(result, what, rank):
    if result != 0:
        print("rank %d: %s returned %d" % (rank, what, result), flush=True)
        os._exit(1)


def watchdog(nccl, comm, rank, timeout, last_issue):
    """Gives up TIMEOUT seconds after the last all-reduce was issued: abort, then abort()."""
    while time.monotonic() - last_issue[0] < timeout:
        time.sleep(0.2)
    print("rank %d: watchdog: no progress for %d s: ncclCommAbort, then abort()" % (
        rank, timeout), flush=True)
    threading.Timer(20, os.abort).start()  # if the abort itself hangs
    nccl.ncclCommAbort(comm)
    os.abort()


def rank_main(args):
    rank = args.rank
    nccl, cudart = bind(args.nccl, args.cudart)
    check(cudart.cudaSetDevice(rank), "cudaSetDevice", rank)
    uid = UniqueId()
    id_file = os.path.join(args.workdir, "unique-id")
    if rank == 0:
        check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId", rank)
        with open(id_file + ".tmp", "wb") as f:
            f.write(bytes(uid))
        os.rename(id_file + ".tmp", id_file)
    else:
        while not os.path.exists(id_file):
            time.sleep(0.05)
        with open(id_file, "rb") as f:
            ctypes.memmove(ctypes.byref(uid), f.read(128), 128)
    count = 1 << 20
    buf, stream, comm = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cudart.cudaMalloc(ctypes.byref(buf), count * 4), "cudaMalloc", rank)
    check(cudart.cudaStreamCreate(ctypes.byref(stream)), "cudaStreamCreate", rank)
    host = (ctypes.c_float * count)(*([float(rank + 1)] * count))
    check(cudart.cudaMemcpy(buf, host, count * 4, 1), "cudaMemcpy", rank)  # host to device
    check(nccl.ncclCommInitRank(ctypes.byref(comm), 2, uid, rank), "ncclCommInitRank", rank)
    last_issue = [time.monotonic()]
    if args.stop_rank >= 0:
        threading.Thread(target=watchdog, args=(nccl, comm, rank, args.timeout, last_issue),
                         daemon=True).start()
    rounds = args.stop_after + 1 if args.stop_rank >= 0 else 20
    for i in range(1, rounds + 1):
        if rank == args.stop_rank and i > args.stop_after:
            print("rank %d: stopped issuing after all-reduce %d" % (rank, args.stop_after),
                  flush=True)
            while True:
                time.sleep(1)  # stuck elsewhere: its watchdog ends it
        last_issue[0] = time.monotonic()
        # ncclFloat32 = 7, ncclSum = 0
        check(nccl.ncclAllReduce(buf, buf, count, 7, 0, comm, stream), "ncclAllReduce", rank)
        if i == args.stop_after + 1:
            print("rank %d: issued all-reduce %d, now waiting for it" % (rank, i), flush=True)
            # Its watchdog ends it: whatever the wait returns once the abort frees it.
            cudart.cudaStreamSynchronize(stream)
            while True:
                time.sleep(1)
        check(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize", rank)
    check(cudart.cudaMemcpy(host, buf, count * 4, 2), "cudaMemcpy", rank)  # device to host
    expected = 3.0 * 2 ** (rounds - 1)  # (1 + 2) doubled by every later round
    if host[0] != expected or host[count - 1] != expected:
        print("rank %d: wrong result %s, expected %s" % (rank, host[0], expected), flush=True)
        return 1
    nccl.ncclCommDestroy(comm)
    print("rank %d: all-reduce ok (%d rounds)" % (rank, rounds), flush=True)
    return 0


def launch(args):
    cudart = ctypes.CDLL(args.cudart)  # the launcher itself never loads NCCL
    devices = ctypes.c_int(0)
    if cudart.cudaGetDeviceCount(ctypes.byref(devices)) != 0 or devices.value < 2:
        print("fewer than 2 GPUs", flush=True)
        return 77
    with tempfile.TemporaryDirectory(prefix="ctypes-allreduce-") as workdir:
        ranks = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", str(r),
                                   "--workdir", workdir] + sys.argv[1:]) for r in range(2)]
        codes = [p.wait() for p in ranks]
    print("launcher: ranks ended with %s" % codes, flush=True)
    if args.stop_rank >= 0:
        return 0 if codes == [-6, -6] else 1  # both ended by their watchdog's abort()
    return 0 if codes == [0, 0] else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nccl", required=True)
    parser.add_argument("--cudart", required=True)
    parser.add_argument("--stop-rank", type=int, default=-1)
    parser.add_argument("--stop-after", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=15)
    parser.add_argument("--rank", type=int, default=-1)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    return rank_main(args) if args.rank >= 0 else launch(args)


if __name__ == "__main__":
    sys.exit(main())
