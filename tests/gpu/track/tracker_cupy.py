"""A CuPy program for the drop-in's hang dump on one GPU (tests/gpu/track/tracker.sh), run under
LD_PRELOAD or LD_AUDIT of libncclshim-nccl.so.0 with NCCLSHIM_RECORD and
NCCLSHIM_RECORD_HANG_MS: a one-rank cupy.cuda.nccl.NcclCommunicator; per round a new
cupy.cuda.Stream (blocking and non-blocking in turn), BURST allReduce calls on it,
synchronize(), del (the stream is destroyed at once; every 4th round then idles IDLE_S, the
others make the next stream at once); the sums checked; then --wait-ms idle, for a false hang
dump to show in --dir (false_dump=0|1). Then, when SIGUSR2 has a handler that Python did not
install (the recorder's, NCCLSHIM_RECORD_SIGNAL=USR2), raises it: the recorder's dump in --dir
shows that CuPy's calls went through the drop-in (signal_dump_ms; -1: none came; none: no
handler). Prints key=value lines; exit 0, 1 when a step failed.
  python3 tracker_cupy.py --rounds 100 --dir DIR --wait-ms 400
"""
import argparse
import os
import signal
import sys
import time

BURST = 8
COUNT = 1024
IDLE_S = 0.015


def has_dump(directory):
    return any(n.startswith("ncclshim-record-") for n in os.listdir(directory))


def wait_for_dump(directory, limit_s=3.0):
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if has_dump(directory):
            return (time.monotonic() - start) * 1e3
        time.sleep(0.001)
    return -1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--wait-ms", type=int, default=400)
    args = parser.parse_args()
    # Python notes a handler installed before it started (the recorder's) as None.
    recorder_handler = signal.getsignal(signal.SIGUSR2) is None
    try:
        import cupy
        from cupy.cuda import nccl

        print("nccl_version=%d" % nccl.get_version())
    except Exception as e:  # no CuPy, or CuPy without NCCL: say which
        print("failed=CuPy's NCCL: %r" % e)
        return 1
    comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    send = cupy.ones(COUNT, dtype=cupy.float32)
    recv = cupy.zeros(COUNT, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    reused, last, wrong = 0, None, 0
    for r in range(args.rounds):
        stream = cupy.cuda.Stream(non_blocking=r % 2 == 1)
        reused += stream.ptr == last
        last = stream.ptr
        for _ in range(BURST):
            comm.allReduce(send.data.ptr, recv.data.ptr, COUNT,
                           nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
        stream.synchronize()
        del stream
        wrong += int(float(recv[0].get()) != 1.0)
        if r % 4 == 3:
            time.sleep(IDLE_S)
    print("rounds=%d\nreused=%d\nwrong_sums=%d" % (args.rounds, reused, wrong))
    time.sleep(args.wait_ms / 1e3)
    print("false_dump=%d" % has_dump(args.dir))
    if recorder_handler:
        os.kill(os.getpid(), signal.SIGUSR2)
        print("signal_dump_ms=%.0f" % wait_for_dump(args.dir))
    else:
        print("signal_dump_ms=none")
    comm.destroy()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
