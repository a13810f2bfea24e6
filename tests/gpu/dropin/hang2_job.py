"""A two-rank job in which rank 1 skips a collective, NCCL and CUDA bound by ctypes
as vLLM's pynccl binds them, for the recorder's hang dump with no signal
(tests/gpu/comm/acceptance2.sh; tests/gpu/dropin/hang_job.py is its one-rank form).

    python3 hang2_job.py --rank R --uid FILE --nccl LIBNCCL --cudart LIBCUDART --dir DIR
                         [--lookup library|global] [--limit S]

One process per rank, started by the caller; rank 0 writes the unique id to FILE (renamed
into place), rank 1 reads it. --lookup library binds the functions in LIBNCCL's handle (the
drop-in's audit mode, LD_AUDIT, sees them); global loads LIBNCCL with RTLD_GLOBAL and binds
them in the process's global scope, where a drop-in in LD_PRELOAD comes first. Both ranks run
two all-reduces that complete; then rank 0 issues a third, which waits for rank 1, and rank 1
skips it. No signal, no abort: rank 0 waits at most LIMIT s for its hang dump in DIR and
prints detected_ms=MS (-1: none); rank 1 then ends by exit() (at most LIMIT s after its second
all-reduce), so that NCCLSHIM_RECORD_AT_EXIT dumps it; rank 0 waits (at most LIMIT s) for
that second dump and ends by os._exit (its all-reduce never completes: no teardown). Exit
status 0, 1 when a call failed, 77 without a second GPU. It imports uid_file, of
tests/gpu/python/ (on PYTHONPATH).
"""
import argparse
import ctypes
import os
import sys
import time

import uid_file

COUNT = 1 << 20


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


def share_uid(nccl, rank, path, check):
    uid = UniqueId()
    if rank == 0:
        check("ncclGetUniqueId", nccl.ncclGetUniqueId(ctypes.byref(uid)))
        uid_file.publish(path, bytes(uid.internal))
    else:
        ctypes.memmove(uid.internal, uid_file.wait_for(path, rank, 30)[:128], 128)
    return uid


def wait_for_dumps(directory, count, until):
    """ms until DIR holds COUNT dumps (-1: not by UNTIL, a monotonic time)."""
    start = time.monotonic()
    while time.monotonic() < until:
        if sum(n.startswith("ncclshim-record-") for n in os.listdir(directory)) >= count:
            return (time.monotonic() - start) * 1000
        time.sleep(0.005)
    return -1


def main():
    parser = argparse.ArgumentParser()
    for name in ("--uid", "--nccl", "--cudart", "--dir"):
        parser.add_argument(name, required=True)
    parser.add_argument("--rank", type=int, required=True, choices=(0, 1))
    parser.add_argument("--lookup", choices=("library", "global"), default="library")
    parser.add_argument("--limit", type=float, default=4.0)
    args = parser.parse_args()
    cudart = ctypes.CDLL(args.cudart)
    if args.lookup == "global":
        ctypes.CDLL(args.nccl, mode=ctypes.RTLD_GLOBAL)
        nccl = ctypes.CDLL(None)
    else:
        nccl = ctypes.CDLL(args.nccl)
    p, i, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    nccl.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(p), i, UniqueId, i]
    nccl.ncclAllReduce.argtypes = [p, p, size, i, i, p, p]
    cudart.cudaMalloc.argtypes = [ctypes.POINTER(p), size]
    cudart.cudaStreamCreate.argtypes = [ctypes.POINTER(p)]
    cudart.cudaStreamSynchronize.argtypes = [p]
    failures = []

    def check(what, result):
        if result != 0:
            print("failed=%s:%d" % (what, result), flush=True)
            failures.append(what)

    ndev = ctypes.c_int(0)
    if cudart.cudaGetDeviceCount(ctypes.byref(ndev)) != 0 or ndev.value < 2:
        print("no second GPU (%d)" % ndev.value, flush=True)
        return 77
    check("cudaSetDevice", cudart.cudaSetDevice(args.rank))
    send, recv, stream = p(), p(), p()
    check("cudaMalloc", cudart.cudaMalloc(ctypes.byref(send), COUNT * 4))
    check("cudaMalloc", cudart.cudaMalloc(ctypes.byref(recv), COUNT * 4))
    check("cudaStreamCreate", cudart.cudaStreamCreate(ctypes.byref(stream)))
    uid = share_uid(nccl, args.rank, args.uid, check)
    comm = p()
    check("ncclCommInitRank", nccl.ncclCommInitRank(ctypes.byref(comm), 2, uid, args.rank))
    if failures:
        return 1

    def all_reduce():  # ncclFloat32 = 7, ncclSum = 0
        check("ncclAllReduce", nccl.ncclAllReduce(send, recv, COUNT, 7, 0, comm, stream))

    all_reduce()
    all_reduce()
    check("sync", cudart.cudaStreamSynchronize(stream))
    print("rank %d: two all-reduces done" % args.rank, flush=True)
    start = time.monotonic()
    if args.rank == 1:  # skips seq 3; exits (and dumps) once rank 0 has dumped, or at LIMIT
        waited = wait_for_dumps(args.dir, 1, start + args.limit)
        print("rank 1: exits after %.0f ms" % waited, flush=True)
        return 1 if failures else 0
    all_reduce()  # seq 3: rank 1 never joins
    detected = wait_for_dumps(args.dir, 1, start + args.limit)
    print("detected_ms=%.0f" % detected, flush=True)
    wait_for_dumps(args.dir, 2, time.monotonic() + args.limit)  # rank 1's exit dump
    os._exit(1 if failures else 0)  # the all-reduce never completes: no teardown


if __name__ == "__main__":
    sys.exit(main())
